/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Path walks: a dentry and its mount, up to a root, written leaf first into
 * the record scratch (or a judgement's buffer), and kernel strings copied
 * whole or flagged.
 */
#ifndef EG_PATHS_BPF_H
#define EG_PATHS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "execgate.h"
#include "execgate.bpf.h"
#include "common.bpf.h"
#include "kfacts.bpf.h"

/* ---- paths --------------------------------------------------------------- */

/*
 * A mount in a mount namespace a user made: one owned (through any level
 * of user namespaces) by a user namespace a user other than root made
 * (user_namespace.owner, the creator's uid as the host sees it), or in no
 * namespace (detached: umount -l with the file still open), which cannot
 * be told. Root's runtimes make user namespaces too (podman
 * --userns=auto, pods without host users): theirs are root's.
 *
 * The whole namespace, not mount by mount: what the host's mounts look
 * like there proves nothing. MNT_LOCKED marks the mounts the kernel
 * copied in, but a user's own mount is copied and locked the same way
 * into a namespace nested in theirs, and pivot_root hands the lock to
 * the user's new root. All mounts of one tree are in one namespace: the
 * file's own mount tells it.
 *
 * Global: verified once, whoever calls it, with a frame of its own.
 */
__noinline int mount_by_user(__u64 m_addr)
{
	struct mount *m = (struct mount *)m_addr;
	struct user_namespace *uns;
	struct mnt_namespace *ns;
	__u32 i;

	ns = BPF_CORE_READ(m, mnt_ns);
	if ((unsigned long)ns < 4096 || (unsigned long)ns >= (unsigned long)-4095)
		return 1;
	uns = BPF_CORE_READ(ns, user_ns);
	for (i = 0; i < EG_USERNS_LEVELS && uns; i++) {
		if (BPF_CORE_READ(uns, level) <= 0)
			return 0;
		if (BPF_CORE_READ(uns, owner.val) != 0)
			return 1;
		uns = BPF_CORE_READ(uns, parent);
	}
	return 1;
}

/*
 * p as a plain number, for a global function's argument: a file's mount
 * is a BTF pointer where it comes from a tracepoint's arguments, which a
 * global function cannot take.
 */
static __always_inline __u64 as_number(void *p)
{
	__u64 n = 0;

	bpf_probe_read_kernel(&n, sizeof(n), &p);
	return n;
}

/* A path through vm (a file's mount) is a user's to spell (EG_F2_USER_MOUNT). */
static __always_inline bool on_user_mount(struct vfsmount *vm)
{
	return mount_by_user(as_number(eg_container_of(vm, struct mount, mnt)));
}

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
#define EG_OVERLAYFS_MAGIC	0x794c7630

static __always_inline bool mount_internal(struct vfsmount *vm)
{
	struct mount *m = eg_container_of(vm, struct mount, mnt);
	unsigned long ns = (unsigned long)BPF_CORE_READ(m, mnt_ns);

	return ns < 4096 || ns >= (unsigned long)-4095;
}

/*
 * The path a process mapped a file by, where the file the kernel keeps is
 * a backing file (Linux 6.8 and later: overlayfs maps its layer's file,
 * whose f_path is on a private mount, and keeps the path the process used
 * beside it). Believed only when it leads to an overlayfs inode of the
 * same number; false: f_path is all there is.
 */
static __always_inline bool backing_user_path(struct file *file, struct dentry **ret_d, struct vfsmount **ret_m)
{
	struct backing_file *bf;
	struct dentry *d;

	if (!bpf_core_field_exists(struct backing_file, user_path))
		return false;
	bf = eg_container_of(file, struct backing_file, file);
	d = BPF_CORE_READ(bf, user_path.dentry);
	if (!d || BPF_CORE_READ(d, d_inode, i_sb, s_magic) != EG_OVERLAYFS_MAGIC ||
	    BPF_CORE_READ(d, d_inode, i_ino) != BPF_CORE_READ(file, f_inode, i_ino))
		return false;
	*ret_d = d;
	*ret_m = BPF_CORE_READ(bf, user_path.mnt);
	return *ret_m != NULL;
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

/* A string copied whole or flagged: the length read, never an error code. */
static __always_inline __u32 read_str(char *buf, __u32 off, const char *src, __u32 *flags,
				      __u32 trunc_flag, __u32 fault_flag, bool user)
{
	char next = 0;
	long n;

	if (off > STR_OFF_MAX)
		return 0;
	if (user)
		n = bpf_probe_read_user_str(at(buf, off, STR_OFF_MAX), EG_FILENAME_MAX, src);
	else
		n = bpf_probe_read_kernel_str(at(buf, off, STR_OFF_MAX), EG_FILENAME_MAX, src);
	if (n <= 0) {
		*flags |= fault_flag;
		return 0;
	}
	if (n >= EG_FILENAME_MAX) {
		if (user)
			bpf_probe_read_user(&next, 1, src + EG_FILENAME_MAX - 1);
		else
			bpf_probe_read_kernel(&next, 1, src + EG_FILENAME_MAX - 1);
		if (next)
			*flags |= trunc_flag;
		n = EG_FILENAME_MAX;
	}
	return n;
}

/* ... from kernel memory */
static __always_inline __u32 read_kstr(char *buf, __u32 off, const char *src, __u32 *flags,
				       __u32 trunc_flag, __u32 fault_flag)
{
	return read_str(buf, off, src, flags, trunc_flag, fault_flag, false);
}

/* ... from the current task's memory */
static __always_inline __u32 read_user_str(char *buf, __u32 off, const char *src, __u32 *flags,
					   __u32 trunc_flag, __u32 fault_flag)
{
	return read_str(buf, off, src, flags, trunc_flag, fault_flag, true);
}

/* Writes f's path at scratch+off; returns its length (EG_SC_USER_MOUNT: a user's mount is on it). */
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
	if (on_user_mount(mnt))
		*flags |= EG_SC_USER_MOUNT;
	return n;
}


/* ---- the file behind a mapping -------------------------------------------- */

struct vma_file_ctx {
	struct file *file;
	__u64 flags;			/* vm_flags */
};

static long vma_file_cb(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	struct vma_file_ctx *c = data;

	c->file = BPF_CORE_READ(vma, vm_file);
	c->flags = BPF_CORE_READ(vma, vm_flags);
	return 0;
}

/*
 * The file mapped at addr in the current task, or NULL (none there, or the
 * mm lock was busy: bpf_find_vma only tries it).
 */
static __always_inline struct file *vma_file(struct task_struct *task, __u64 addr, __u64 *ret_flags)
{
	struct vma_file_ctx c = {};

	if (bpf_find_vma(task, addr, vma_file_cb, &c, 0))
		return NULL;
	if (ret_flags)
		*ret_flags = c.flags;
	return c.file;
}


/*
 * An overlayfs view of a file has the overlay's device and inode; the file
 * behind it (upper or lower layer) is the one a literal path elsewhere
 * names. The kernel maps an ELF's segments from that backing file (ovl_mmap
 * puts it in vm_file), so the new image's text mapping tells it. When it
 * cannot be read (bpf_find_vma only tries the mm's lock, which another
 * process can hold: /proc/PID/clear_refs), the record says so and the
 * kernel rules refuse the exec: the file a literal path names may be the
 * one behind the view.
 */
static __always_inline void file_backing(struct eg_event *e, struct task_struct *task, struct inode *inode)
{
	struct file *real;
	__u64 start;

	if (BPF_CORE_READ(inode, i_sb, s_magic) != EG_OVERLAYFS_MAGIC)
		return;
	start = BPF_CORE_READ(task, mm, start_code);
	real = vma_file(task, start, NULL);
	if (!real) {
		e->flags2 |= EG_F2_BACKING_UNKNOWN;
		return;
	}
	e->backing_dev = inode_dev(BPF_CORE_READ(real, f_inode));
	e->backing_ino = BPF_CORE_READ(real, f_inode, i_ino);
	if (e->backing_dev != e->dev || e->backing_ino != e->ino)
		e->flags |= EG_F_BACKING;
}

/*
 * The task's working directory, as it sees it (walked up to its own root),
 * at off in the scratch buffer: its length (at most EG_CWD_MAX), and the
 * EG_F_CWD_* flags into *flags. One walk for exec and failed-exec records.
 */
static __always_inline __u32 read_cwd(struct task_struct *task, __u32 off, __u32 *flags)
{
	struct fs_struct *fs = task->fs;	/* task: a BTF pointer (tp_btf, bpf_get_current_task_btf) */
	struct path_walk w;
	__u32 n;

	if (!fs) {
		*flags |= EG_F_CWD_FAULT;
		return 0;
	}
	PATH_WALK(w, fs->pwd.dentry, fs->pwd.mnt, fs->root.dentry, fs->root.mnt, off, EG_F_CWD_TRUNC,
		  EG_F_CWD_FAULT, EG_F_CWD_DELETED);
	n = read_path(&w);
	*flags |= w.flags;
	barrier_var(n);
	return n > EG_CWD_MAX ? EG_CWD_MAX : n;
}

#endif /* EG_PATHS_BPF_H */
