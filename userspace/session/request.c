// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A trapped exec: the request as it came from a session's seccomp
 * listener, and its facts. The kernel's task storage and the facts
 * program say who the thread is; its path and argv are read from its
 * memory (bounded) and what it will run is planned from its own root, cwd
 * and dirfd. Nothing here is believed until the notification is found
 * still pending after the last read: by request_valid, or by the answer
 * itself where that is a CONTINUE (request_finish).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <seccomp.h>
#include <bpf/bpf.h>
#include "loop/loop.h"
#include "events/meta.h"
#include "trace/cgroups.h"
#include "session/boundary.h"
#include "session/internal.h"
#include "util/clock.h"
#include "util/fileid.h"
#include "util/log.h"

void request_free(struct exec_request *r)
{
	if (!r)
		return;
	strv_free(r->argv, r->argc);
	if (r->planned)
		exec_plan_free(&r->plan);
	if (r->pidfd >= 0)
		close(r->pidfd);
	free(r->req);
	free(r);
}

bool request_valid(const struct exec_request *r)
{
	int rc;

	/* the check takes the listener's lock interruptibly: a receiver's wake-up is no answer */
	do
		rc = seccomp_notify_id_valid(r->listener, r->id);
	while (rc && errno == EINTR);
	return rc == 0;
}

unsigned int latency_bucket(uint64_t us)
{
	unsigned int b;

	if (us < 16)
		return us;
	b = 63 - __builtin_clzll(us);		/* 4.. */
	if (b > 31)
		return LATENCY_BUCKETS - 1;
	return 16 + (b - 4) * 8 + ((us >> (b - 3)) & 7);
}

uint64_t latency_bucket_low(unsigned int b)
{
	if (b < 16)
		return b;
	b -= 16;
	return (8ull + (b & 7)) << (b / 8 + 1);
}

void latency_record(struct eg_sessions *s, const struct exec_request *r)
{
	if (r->parked || !r->received_ns)
		return;
	s->latency[latency_bucket((eg_mono_ns() - r->received_ns) / 1000)]++;
}

/*
 * Opened late (refusals and approvals only): the request must still stand
 * after the open, so that the tgid could not have been another process's.
 */
int request_pidfd(struct exec_request *r)
{
	if (r->pidfd >= 0 || r->tgid <= 0)
		return r->pidfd;
	r->pidfd = syscall(__NR_pidfd_open, r->tgid, 0);
	if (r->pidfd >= 0 && !request_valid(r)) {
		close(r->pidfd);
		r->pidfd = -1;
	}
	return r->pidfd;
}

static void proc_cgroup(pid_t tid, char *buf, size_t len);

/*
 * The task's cgroup path: by the id the facts program read, through the
 * daemon's cache of ids (what the tracer's records use), else from
 * /proc/TID/cgroup (an open, a read and a close through /proc).
 */
void request_cgroup(const struct eg_sessions *s, struct exec_request *r)
{
	const char *path;
	size_t n;

	if (r->cgroup_read)
		return;
	r->cgroup_read = true;
	path = r->cgroup_id ? cgroup_cache_path(s->o.cgroups, r->cgroup_id) : NULL;
	n = path ? strlen(path) : sizeof(r->cgroup);
	if (n < sizeof(r->cgroup)) {
		memcpy(r->cgroup, path, n + 1);
		return;
	}
	proc_cgroup(r->tid, r->cgroup, sizeof(r->cgroup));
}

/* ---- the facts of one trapped exec ----------------------------------------- */

/*
 * Tgid and effective uid from one read of /proc/TID/status (both lines are
 * near its start, after a Name of at most 64 escaped bytes). 0 and -1 when
 * the task is gone.
 */
static void proc_status(pid_t tid, pid_t *tgid, uint32_t *euid)
{
	char path[64], buf[2048], *p;
	unsigned int r, e;
	ssize_t n;
	int fd, t;

	*tgid = 0;
	*euid = (uint32_t)-1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = 0;
	p = strstr(buf, "\nTgid:");
	if (p && sscanf(p + 1, "Tgid: %d", &t) == 1)
		*tgid = t;
	p = strstr(buf, "\nUid:");
	if (p && sscanf(p + 1, "Uid: %u %u", &r, &e) == 2)
		*euid = e;
}

static void proc_cgroup(pid_t tid, char *buf, size_t len)
{
	char path[64], line[1024];
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3))
			continue;
		line[strcspn(line, "\n")] = '\0';
		if (strlen(line + 3) < len)
			memcpy(buf, line + 3, strlen(line + 3) + 1);
		break;
	}
	fclose(f);
}

static bool fd_cloexec(pid_t tid, int fd)
{
	char path[64], line[256];
	unsigned long flags = 0;
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", (int)tid, fd);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "flags: %lo", &flags) == 1) {
			found = true;
			break;
		}
	fclose(f);
	return found && (flags & O_CLOEXEC);
}

/*
 * The limits of argv reading: the smallest over the daemon's policy (the
 * defaults without one) and every session policy above the exec. A
 * session policy can lower them, never raise them: they bound what the
 * daemon reads and holds for each exec a session makes, and the kernel
 * itself takes no more than 6 MiB of argv and environment.
 *
 * Never more bytes than the kernel's check compares (the tracer's
 * --max-argv-bytes, and a ticket's EG_TICKET_ARGV_MAX): what is judged is
 * what is pinned. An argument read past that could be rewritten by
 * another thread after the read and before the exec copies it; such an
 * argv counts as cut (on_truncated) instead.
 */
#define ARGV_BYTES_CAP	(6u << 20)
#define ARGC_CAP	(1u << 20)

void request_limits(struct eg_sessions *s, struct eg_session *se, uint32_t *ret_argc, uint32_t *ret_bytes)
{
	const struct eg_policy_settings *ps;
	uint32_t argc = 1000, bytes = 65536;	/* the defaults of a policy */
	struct eg_session *x;

	if (*s->o.global) {
		ps = policy_settings(*s->o.global);
		argc = ps->max_argc;
		bytes = ps->max_argv_bytes;
	}
	for (x = se; x; x = x->parent) {
		if (!x->policy)
			continue;
		ps = policy_settings(x->policy);
		if (ps->max_argc < argc)
			argc = ps->max_argc;
		if (ps->max_argv_bytes < bytes)
			bytes = ps->max_argv_bytes;
	}
	if (s->o.argv_cap && s->o.argv_cap < bytes)
		bytes = s->o.argv_cap;
	if (bytes > EG_TICKET_ARGV_MAX)
		bytes = EG_TICKET_ARGV_MAX;
	*ret_argc = argc < ARGC_CAP ? argc : ARGC_CAP;
	*ret_bytes = bytes < ARGV_BYTES_CAP ? bytes : ARGV_BYTES_CAP;
}

/*
 * Tgid, effective uid, and the kernel's task storage of the trapped
 * thread: from one run of the facts program (facts.c), which also says
 * whether its root is ours; else through one thread pidfd, PIDFD_GET_INFO
 * (Linux 6.13) answering the first two, /proc/TID/status on older kernels.
 * Until the notification is found still valid (request_finish), these may
 * be another task's. Reads only the kernel's maps (s->facts and
 * s->o.tasks_fd are set once): no lock needed.
 */
static int task_facts(const struct eg_sessions *s, struct exec_request *r)
{
	struct eg_pidfd_info info = { .mask = EG_PIDFD_INFO_PID | EG_PIDFD_INFO_CREDS };
	int fd, rc = 0;

	if (s->facts) {
		struct eg_facts f;

		rc = facts_read(s->facts, r->tid, &f);
		if (rc)
			return rc;
		r->tgid = f.tgid;
		r->euid = f.euid;
		r->task = f.task;
		r->same_root = f.flags & EG_FACTS_SAME_ROOT;
		r->ns_known = f.flags & EG_FACTS_NS;
		r->pid_ns_ours = f.flags & EG_FACTS_PID_NS_OURS;
		r->mnt_ns_root_made = f.flags & EG_FACTS_MNT_ROOT_MADE;
		r->pid_ns = f.pid_ns;
		r->mnt_ns = f.mnt_ns;
		r->cgroup_id = (f.flags & EG_FACTS_CGROUP) ? f.cgroup_id : 0;
		return (f.flags & EG_FACTS_STORAGE) ? 0 : -ENOENT;
	}
	fd = syscall(__NR_pidfd_open, r->tid, PIDFD_THREAD);
	if (fd < 0) {
		/* before Linux 6.9 only a thread group leader has a pidfd */
		proc_status(r->tid, &r->tgid, &r->euid);
		return task_lookup(s, r->tid, true, &r->task);
	}
	if (!ioctl(fd, EG_PIDFD_GET_INFO, &info) && (info.mask & EG_PIDFD_INFO_CREDS) &&
	    info.pid == (uint32_t)r->tid) {
		r->tgid = info.tgid;
		r->euid = info.euid;
	} else {
		proc_status(r->tid, &r->tgid, &r->euid);
	}
	if (bpf_map_lookup_elem(s->o.tasks_fd, &fd, &r->task))
		rc = -errno;
	close(fd);
	return rc;
}

/*
 * In a worker or a receiver: r's limits and syscall fields were set by
 * request_take. The path now (with the page of argv's array), argv's
 * strings when the lookup needs them (read_argv): pk holds what was read.
 */
static int read_path(struct exec_request *r, struct peek *pk)
{
	const struct seccomp_data *d = &r->req->data;
	int rc;

	rc = peek_exec_path(pk, r->tid, r->execveat ? d->args[1] : d->args[0], r->path, sizeof(r->path),
			    &r->path_trunc, r->execveat ? d->args[2] : d->args[1]);
	if (rc)
		return rc;
	return r->path_trunc ? -ENAMETOOLONG : 0;
}

/* the caller checks that the request still stands before believing any of it */
static int read_argv(struct exec_request *r, struct peek *pk)
{
	const struct seccomp_data *d = &r->req->data;

	r->argv_read = true;
	return peek_exec_argv(pk, r->execveat ? d->args[2] : d->args[1], r->max_argc, r->max_argv_bytes,
			      &r->argv, &r->argc, &r->argv_bytes, &r->argv_trunc);
}

struct argv_loader {
	struct exec_request *r;
	struct peek *pk;
};

/* exec_plan's load_argv: read once the program is found; a read that fails is rc_read's */
static int load_argv(void *arg, const char *const **ret_argv, unsigned int *ret_argc)
{
	struct argv_loader *l = arg;
	struct exec_request *r = l->r;

	if (!r->argv_read)
		r->rc_read = read_argv(r, l->pk);
	*ret_argv = (const char *const *)r->argv;
	*ret_argc = r->argc;
	return r->rc_read;
}

bool lookup_fails_in_kernel(int rc)
{
	switch (-rc) {
	case ENOENT: case ENOTDIR: case EACCES: case EPERM: case ELOOP: case ENAMETOOLONG: case EFAULT:
	case EBADF: case ENOEXEC: case EISDIR: case ETXTBSY: case E2BIG: case ENXIO:
		return true;
	default:
		return false;
	}
}

/*
 * The daemon's own root, and what makes a task's root the same: the same
 * directory of the same mount (a mount belongs to one namespace, and the
 * one we hold open cannot be freed and its id reused).
 */
struct root_id {
	uint64_t mnt, dev, ino;
};

static int root_id_of(int dirfd, const char *path, int flags, struct root_id *ret)
{
	struct statx stx;

	if (statx(dirfd, path, flags, STATX_INO | STATX_MNT_ID, &stx))
		return -errno;
	if (!(stx.stx_mask & STATX_MNT_ID))
		return -EOPNOTSUPP;
	ret->mnt = stx.stx_mnt_id;
	ret->dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
	ret->ino = stx.stx_ino;
	return 0;
}

int roots_open(struct eg_roots *roots)
{
	struct root_id id;

	roots->fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (roots->fd < 0)
		return -errno;
	/* without mount ids (before Linux 5.8) every task's root is opened from /proc */
	if (!root_id_of(roots->fd, "", AT_EMPTY_PATH, &id)) {
		roots->mnt = id.mnt;
		roots->dev = id.dev;
		roots->ino = id.ino;
		roots->known = true;
	}
	return 0;
}

void roots_close(struct eg_roots *roots)
{
	if (roots->fd >= 0)
		close(roots->fd);
	roots->fd = -1;
}

/*
 * The task's root, for absolute paths: ours when it is the same (as the
 * kernel said, or /proc/TID/root shows), else /proc/TID/root opened (a
 * chroot, a pivot_root, another mount namespace).
 * *ret_own: the fd is ours, not to be closed.
 */
static int task_root(const struct eg_roots *roots, const struct exec_request *r, bool *ret_own)
{
	pid_t tid = r->tid;
	struct root_id its;
	char path[64];

	/* the kernel said so (facts.c): same mount, same dentry */
	if (r->same_root && roots->fd >= 0) {
		*ret_own = true;
		return roots->fd;
	}
	snprintf(path, sizeof(path), "/proc/%d/root", (int)tid);
	if (roots->known && roots->fd >= 0 && !root_id_of(AT_FDCWD, path, 0, &its) &&
	    its.mnt == roots->mnt && its.dev == roots->dev && its.ino == roots->ino) {
		*ret_own = true;
		return roots->fd;
	}
	*ret_own = false;
	return open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

struct lazy_cwd {
	pid_t tid;
	int fd;
	bool tried;
};

/* The caller's working directory, opened the first time a relative path needs it. */
static int open_cwd(void *arg)
{
	struct lazy_cwd *c = arg;
	char path[64];

	if (!c->tried) {
		c->tried = true;
		snprintf(path, sizeof(path), "/proc/%d/cwd", (int)c->tid);
		c->fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (c->fd < 0)
			c->fd = -errno;
	}
	return c->fd;
}

/*
 * What the kernel will run. Paths resolve from the task's own root, cwd
 * and execveat dirfd, through its own mounts. The caller checks that the
 * request still stands afterwards: until then /proc/TID may have been
 * another task.
 */
static int plan_request(const struct eg_roots *roots, struct exec_request *r, struct peek *pk)
{
	struct eg_exec_spec spec = { .cwd_fd = -1, .root_fd = -1, .dir_fd = -1 };
	struct lazy_cwd cwd = { .tid = r->tid, .fd = -1 };
	struct argv_loader argv = { .r = r, .pk = pk };
	bool own_root_fd = false;
	char path[64];
	int rc;

	spec.open_cwd = open_cwd;
	spec.open_cwd_arg = &cwd;
	/*
	 * Absolute paths resolve from the task's own root and through its own
	 * mounts: a chroot, a pivot_root, or a private mount namespace whose
	 * root is the host's directory with other things mounted below it.
	 */
	spec.root_fd = task_root(roots, r, &own_root_fd);
	if (spec.root_fd < 0) {
		/* not "the daemon's root" (as -1 would mean to exec_plan): nothing is looked up */
		rc = -errno;
		goto out;
	}
	spec.execveat = r->execveat;
	spec.dir_fd_num = r->dirfd_num;
	if (r->execveat && r->dirfd_num != AT_FDCWD) {
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)r->tid, r->dirfd_num);
		spec.dir_fd = open(path, O_PATH | O_CLOEXEC);
		spec.dir_fd_cloexec = fd_cloexec(r->tid, r->dirfd_num);
		if (spec.dir_fd < 0) {
			rc = -EBADF;
			goto out;
		}
	}
	spec.path = r->path;
	spec.at_flags = r->at_flags;
	spec.load_argv = load_argv;
	spec.load_argv_arg = &argv;
	spec.content_sizes = r->content_sizes;
	spec.n_content_sizes = r->n_content_sizes;
	spec.loaders = roots->loaders;
	spec.tgid = r->tgid;
	spec.tid = r->tid;
	rc = exec_plan(&spec, &r->plan);
	r->planned = true;
out:
	if (cwd.fd >= 0)
		close(cwd.fd);
	if (spec.root_fd >= 0 && !own_root_fd)
		close(spec.root_fd);
	if (spec.dir_fd >= 0)
		close(spec.dir_fd);
	return rc;
}

struct exec_request *request_new(const struct eg_sessions *s, struct seccomp_notif *req)
{
	struct exec_request *r = malloc(sizeof(*r));

	if (!r)
		return NULL;
	memset(r, 0, offsetof(struct exec_request, plan));
	r->received_ns = eg_mono_ns();
	r->req = req;
	r->listener = -1;
	r->id = req->id;
	r->tid = req->pid;
	r->pidfd = -1;
	/* the session and depth the kernel keeps for this very thread (no lock: the map is the kernel's) */
	if (req->data.arch == AUDIT_ARCH_X86_64 &&
	    (req->data.nr == __NR_execve || req->data.nr == __NR_execveat))
		r->rc_facts = task_facts(s, r);
	return r;
}

void request_work(const struct eg_roots *roots, struct exec_request *r)
{
	struct peek pk;

	r->rc_plan = 0;
	r->rc_read = read_path(r, &pk);
	if (r->rc_read)
		return;
	r->rc_plan = plan_request(roots, r, &pk);
	/*
	 * The kernel checks a layer's execute list only at an exec: the
	 * program a loader maps is looked up in every layer's list of the
	 * session and its outer ones (the judge refuses it, rule loader).
	 */
	if (!r->rc_plan && r->plan.loader == EG_LOADER_TARGET) {
		const struct eg_session *se;

		for (se = r->session; se && !r->target_off_lists; se = se->parent)
			r->target_off_lists = se->boundary && !boundary_lists_let_run(se->exec_lists,
										     r->plan.target.path);
	}
	/*
	 * A program that is not there (a shell's PATH search, most of a
	 * build's failed execs) is let fail with argv unread: the kernel
	 * fails it and its record has argv. Every other outcome needs it, and
	 * so does a request that may rejoin an approval (argv_wanted).
	 */
	if (!r->argv_read && (r->argv_wanted || !lookup_fails_in_kernel(r->rc_plan)))
		r->rc_read = read_argv(r, &pk);
}
