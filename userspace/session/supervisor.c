// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The supervisor: one trapped execve/execveat at a time, from a session's
 * seccomp listener. Nothing the target wrote is believed: its path and argv
 * are read from its memory (bounded), the file is opened by the daemon and
 * the '#!' chain followed the way the kernel will follow it, depth and
 * session come from the kernel's task storage. The notification id is
 * checked after every read and before the answer, so a target that died
 * or was replaced is never answered for. An allowed exec goes on only
 * after a ticket in a BPF map names exactly what was allowed; the kernel
 * kills the task at the exec if what runs is anything else.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <seccomp.h>
#include <bpf/bpf.h>
#include "daemon/loop.h"
#include "events/meta.h"
#include "session/internal.h"
#include "util/clock.h"
#include "util/fileid.h"
#include "util/log.h"

#ifndef AUDIT_ARCH_X86_64
#define AUDIT_ARCH_X86_64 0xc000003e
#endif
#ifndef __NR_pidfd_getfd
#define __NR_pidfd_getfd 438
#endif
#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434
#endif
#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif

/* PIDFD_GET_INFO (Linux 6.13), its first published size; the system headers may be older */
struct eg_pidfd_info {
	uint64_t mask;
	uint64_t cgroupid;
	uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
	int32_t exit_code;
};
_Static_assert(sizeof(struct eg_pidfd_info) == 64, "PIDFD_INFO_SIZE_VER0");
#define EG_PIDFD_GET_INFO	_IOWR(0xFF, 11, struct eg_pidfd_info)
#define EG_PIDFD_INFO_PID	(1ull << 0)
#define EG_PIDFD_INFO_CREDS	(1ull << 1)

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

static bool still_valid(const struct exec_request *r)
{
	return seccomp_notify_id_valid(r->listener, r->id) == 0;
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

static int respond(const struct exec_request *r, int error, bool cont)
{
	struct seccomp_notif_resp resp = {
		.id = r->id,
		.val = 0,
		.error = cont ? 0 : error,
		.flags = cont ? SECCOMP_USER_NOTIF_FLAG_CONTINUE : 0,
	};
	struct eg_sessions *s = r->session ? r->session->owner : NULL;

	if (s)
		latency_record(s, r);
	/* a receiver sends it once it let go of the loop's lock (answer_send) */
	if (s && cont && s->answer.defer && !s->answer.have && !r->parked) {
		s->answer.have = true;
		s->answer.listener = r->listener;
		s->answer.id = r->id;
		s->answer.tid = r->tid;
		s->answer.map = -1;
		s->answer.verdict_seq = 0;
		s->answer.allowed = false;
		return 0;
	}
	return seccomp_notify_respond(r->listener, &resp);
}

/* The answer just held for r, if it is: what goes with it. */
static struct eg_answer *held_for(struct eg_sessions *s, const struct exec_request *r)
{
	return s->answer.have && s->answer.id == r->id && s->answer.listener == r->listener ? &s->answer : NULL;
}

void answer_hold(struct eg_sessions *s)
{
	s->answer.defer = true;
	s->answer.have = false;
}

void answer_take(struct eg_sessions *s, struct eg_answer *ret)
{
	*ret = s->answer;
	s->answer.defer = false;
	s->answer.have = false;
}

void answer_send(struct eg_sessions *s, const struct eg_answer *a)
{
	struct seccomp_notif_resp resp = { .id = a->id, .flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE };
	uint32_t key = a->tid;

	if (!a->have || !seccomp_notify_respond(a->listener, &resp))
		return;
	/* gone (killed, or it left the wait): nothing of it may stay for another exec of its thread */
	loop_lock(s->o.loop);
	if (a->map >= 0)
		bpf_map_delete_elem(a->map, &key);
	verdict_forget(s, a->tid, a->verdict_seq);
	if (a->allowed && s->st.allowed)
		s->st.allowed--;
	loop_unlock(s->o.loop);
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
	if (r->pidfd >= 0 && !still_valid(r)) {
		close(r->pidfd);
		r->pidfd = -1;
	}
	return r->pidfd;
}

static void proc_cgroup(pid_t tid, char *buf, size_t len);

void request_cgroup(struct exec_request *r)
{
	if (r->cgroup_read)
		return;
	r->cgroup_read = true;
	proc_cgroup(r->tid, r->cgroup, sizeof(r->cgroup));
}

void request_deny(struct eg_sessions *s, struct exec_request *r, const char *line)
{
	/* for the record of the refusal, while the task is surely there */
	request_cgroup(r);
	if (line)
		tell_target(s, r, line);
	if (respond(r, -EACCES, false))
		p_dbg("session: answer for tid %d failed (it is gone)", (int)r->tid);
}

/* The committed argv of the program that will run, NUL separated, into t. */
static void fill_ticket(struct eg_sessions *s, struct exec_request *r, struct eg_ticket *t)
{
	const struct eg_program *f = exec_plan_final(&r->plan);
	uint64_t full = 0, stored = 0;
	unsigned int i;

	memset(t, 0, offsetof(struct eg_ticket, argv));
	t->session = r->session->id;
	t->dev = f->dev;
	t->ino = f->ino;
	if (r->plan.n > 1) {
		t->flags |= EG_TICKET_SCRIPT;
		t->script_dev = r->plan.prog[0].dev;
		t->script_ino = r->plan.prog[0].ino;
		/* the scripts between the first and the interpreter, each opened by the kernel in turn */
		for (i = 1; i + 1 < r->plan.n && t->chain_n < EG_CHAIN_MAX; i++) {
			t->chain_dev[t->chain_n] = r->plan.prog[i].dev;
			t->chain_ino[t->chain_n] = r->plan.prog[i].ino;
			t->chain_n++;
		}
	}
	/* a loader run as the command: the one program it may map */
	if (r->plan.loader == EG_LOADER_TARGET) {
		t->flags |= EG_TICKET_LOADER;
		t->target_dev = r->plan.target.dev;
		t->target_ino = r->plan.target.ino;
	}
	for (i = 0; i < f->argc; i++) {
		size_t n = strlen(f->argv[i]) + 1;

		full += n;
		if (stored + n <= s->o.argv_cap && stored + n <= EG_TICKET_ARGV_MAX) {
			memcpy(t->argv + stored, f->argv[i], n);
			stored += n;
		} else {
			/* the tracer keeps only its cap of argv: check what both have */
			size_t room = s->o.argv_cap < EG_TICKET_ARGV_MAX ? s->o.argv_cap : EG_TICKET_ARGV_MAX;

			if (stored < room) {
				memcpy(t->argv + stored, f->argv[i], room - stored);
				stored = room;
			}
			t->flags |= EG_TICKET_ARGV_PREFIX;
		}
	}
	/* an argv we did not read whole (on_truncated: allow) is only a prefix */
	if (r->argv_trunc)
		t->flags |= EG_TICKET_ARGV_PREFIX;
	t->argv_len = full;
	t->argv_stored = stored;
	t->issued_ns = eg_boot_ns();
}

/*
 * The ticket into the small map when its argv fits (a map update copies
 * the whole value: 568 bytes instead of 64 KiB), else into the large one,
 * and then no small ticket of this thread may stand before it: the kernel
 * looks in the small map first. The thread waits in this very exec until
 * we answer, so it makes no exec in between. The map fd written, or -errno.
 */
static int ticket_put(struct eg_sessions *s, uint32_t key)
{
	if (s->ticket->argv_stored <= EG_TICKET_SMALL_ARGV_MAX) {
		/* the small value is a prefix of the large one (execgate.h) */
		if (bpf_map_update_elem(s->o.tickets_small_fd, &key, s->ticket, BPF_ANY))
			return -errno;
		return s->o.tickets_small_fd;
	}
	if (bpf_map_delete_elem(s->o.tickets_small_fd, &key) && errno != ENOENT)
		return -errno;
	if (bpf_map_update_elem(s->o.tickets_fd, &key, s->ticket, BPF_ANY))
		return -errno;
	return s->o.tickets_fd;
}

/*
 * s->ticket into its map, then CONTINUE. -ESRCH: the request is gone (its
 * ticket taken back); another -errno: no ticket was written, the request
 * still waits for an answer.
 */
static int ticket_continue(struct eg_sessions *s, struct exec_request *r)
{
	uint32_t key = r->tid;
	int map = ticket_put(s, key);

	if (map < 0)
		return map;
	/*
	 * A fresh request was checked after its last read (handle); the
	 * answer itself fails for a request that is gone. One that waited for
	 * a person is checked again, for the record of the outcome.
	 */
	if ((r->parked && !still_valid(r)) || respond(r, 0, true)) {
		bpf_map_delete_elem(map, &key);
		return -ESRCH;
	}
	if (held_for(s, r))
		s->answer.map = map;
	return 0;
}

int request_allow(struct eg_sessions *s, struct exec_request *r)
{
	int rc;

	fill_ticket(s, r, s->ticket);
	rc = ticket_continue(s, r);
	if (rc && rc != -ESRCH)
		request_deny(s, r, "execgate: denied: too many execs in flight in this session (no ticket)\n");
	return rc;
}

/*
 * An exec the kernel will refuse (no such file, a directory, a path too
 * long): let the kernel refuse it, so its record comes from the tracer
 * like any failed exec's, with the kernel's own errno, and a shell's PATH
 * search looks the same in a session as outside one. The ticket names no
 * file (device and inode 0): should the kernel find one after all (made
 * since we looked), that exec is killed before its image runs (refused at
 * bprm_check_security where BPF LSM is on), never run unjudged. rc: the
 * error to give if the ticket cannot be written.
 */
static void request_let_fail(struct eg_sessions *s, struct exec_request *r, int rc)
{
	int err;

	memset(s->ticket, 0, offsetof(struct eg_ticket, argv));
	s->ticket->session = r->session->id;
	s->ticket->issued_ns = eg_boot_ns();
	err = ticket_continue(s, r);
	if (!err) {
		uint64_t seq = verdict_put(s, r->tid, r->session->id, "allow", "allowed", NULL, NULL, NULL, 0, 0);

		if (held_for(s, r))
			s->answer.verdict_seq = seq;
	} else if (err != -ESRCH)
		respond(r, rc, false);
}

void request_json(struct jsonw *w, const struct exec_request *r)
{
	const struct eg_program *p = r->planned && !r->plan.err ? &r->plan.prog[0] : NULL;
	char sid[16];
	unsigned int i;

	jsonw_int_field(w, "pid", r->tgid);
	jsonw_int_field(w, "tid", r->tid);
	jsonw_uint_field(w, "euid", r->euid);
	jsonw_string_field(w, "syscall", r->execveat ? "execveat" : "execve");
	jsonw_string_field(w, "filename", p ? p->path : r->path);
	jsonw_string_field(w, "path_requested", r->path);
	if (p && r->plan.n > 1) {
		jsonw_string_field(w, "interpreter", exec_plan_final(&r->plan)->path);
		jsonw_string_field(w, "interpreter_requested", r->plan.prog[1].requested);
	}
	jsonw_key(w, "argv");
	jsonw_start_array(w);
	for (i = 0; i < r->argc; i++)
		jsonw_string(w, r->argv[i]);
	jsonw_end_array(w);
	jsonw_uint_field(w, "argc", r->argc);
	jsonw_bool_field(w, "truncated", r->argv_trunc);
	jsonw_int_field(w, "depth", r->depth);
	jsonw_bool_field(w, "depth_known", r->depth_known);
	jsonw_int_field(w, "session_depth", r->session_depth);
	snprintf(sid, sizeof(sid), "s-%x", r->session->id);
	jsonw_string_field(w, "session", sid);
	jsonw_string_field(w, "cgroup", r->cgroup[0] ? r->cgroup : NULL);
}

void emit_blocked(struct eg_sessions *s, struct exec_request *r, const struct eg_verdict *v,
		  const char *action, const char *approval_id)
{
	struct sbuf b = {};
	struct jsonw w;
	char text[512];

	request_cgroup(r);
	meta_open(&w, &b, "exec_failed");
	jsonw_key(&w, "exec_id");
	jsonw_null(&w);
	request_json(&w, r);
	jsonw_uint_field(&w, "errno", EACCES);
	jsonw_string_field(&w, "error", "EACCES");
	jsonw_string_field(&w, "decision", eg_decision_name(v->decision));
	jsonw_string_field(&w, "rule", v->rule);
	jsonw_string_field(&w, "message", v->message);
	jsonw_string_field(&w, "action", action);
	jsonw_string_field(&w, "layer", "seccomp");
	if (v->error)
		jsonw_string_field(&w, "reason", v->error);
	if (approval_id)
		jsonw_string_field(&w, "approval_id", approval_id);
	jsonw_end_object(&w);
	sbuf_putc(&b, '\n');
	snprintf(text, sizeof(text), "%s s-%x pid %d depth %d: %.200s (%.100s)", action, r->session->id,
		 (int)r->tgid, r->depth, r->argc ? r->argv[0] : r->path, v->rule ? v->rule : "default");
	sessions_emit(s, &b, text);
	sbuf_free(&b);
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
 */
#define ARGV_BYTES_CAP	(6u << 20)
#define ARGC_CAP	(1u << 20)

static void limits(struct eg_sessions *s, struct eg_session *se, uint32_t *ret_argc, uint32_t *ret_bytes)
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

/* In a worker or a receiver: r's limits and syscall fields were set by request_take. */
static int read_request(struct exec_request *r)
{
	const struct seccomp_data *d = &r->req->data;
	uint64_t path_addr, argv_addr;
	int rc;

	path_addr = r->execveat ? d->args[1] : d->args[0];
	argv_addr = r->execveat ? d->args[2] : d->args[1];
	rc = peek_exec_args(r->tid, path_addr, r->path, sizeof(r->path), &r->path_trunc, argv_addr,
			    r->max_argc, r->max_argv_bytes, &r->argv, &r->argc, &r->argv_bytes,
			    &r->argv_trunc);
	if (rc)
		return rc;
	if (r->path_trunc)
		return -ENAMETOOLONG;
	/* the caller checks that the request still stands before believing any of it */
	return 0;
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

int supervisor_init(struct eg_sessions *s)
{
	struct root_id id;
	int err;

	/* first, while the daemon holds nothing a session controls: the teller forks */
	err = tell_init(s);
	if (err)
		p_warn("session: cannot start the stderr helper (%s): refusals go without their line",
		       strerror(-err));
	/*
	 * libseccomp learns the kernel's API level and notification sizes on
	 * first use, into unlocked globals: once here, before any receiver
	 * thread can race another to it.
	 */
	{
		struct seccomp_notif *req = NULL;
		struct seccomp_notif_resp *resp = NULL;

		seccomp_api_get();
		if (!seccomp_notify_alloc(&req, &resp))
			seccomp_notify_free(req, resp);
	}
	/* the kernel's facts about a trapped task in one system call, where the program loads */
	err = facts_open(s->o.tasks_fd, &s->facts);
	if (err)
		p_dbg("session: the facts program cannot serve here (%s): pidfds and /proc instead",
		      strerror(-err));
	s->roots.loaders = s->o.loaders;
	s->roots.fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (s->roots.fd < 0)
		return -errno;
	/* without mount ids (before Linux 5.8) every task's root is opened from /proc */
	if (!root_id_of(s->roots.fd, "", AT_EMPTY_PATH, &id)) {
		s->roots.mnt = id.mnt;
		s->roots.dev = id.dev;
		s->roots.ino = id.ino;
		s->roots.known = true;
	}
	return offload_init(s);
}

void supervisor_fini(struct eg_sessions *s)
{
	offload_fini(s);
	facts_close(s->facts);
	s->facts = NULL;
	tell_fini(s);
	if (s->roots.fd >= 0)
		close(s->roots.fd);
	s->roots.fd = -1;
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
static int plan_request(const struct eg_roots *roots, struct exec_request *r)
{
	struct eg_exec_spec spec = { .cwd_fd = -1, .root_fd = -1, .dir_fd = -1 };
	struct lazy_cwd cwd = { .tid = r->tid, .fd = -1 };
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
	spec.argv = (const char *const *)r->argv;
	spec.argc = r->argc;
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

/* What p's rules look at besides the exec (POLICY_NEEDS_*). */
static unsigned int policy_needs(const struct eg_policy *p)
{
	struct eg_rule_info ri;
	unsigned int needs = 0;
	size_t i, n = 0;

	policy_internal_bypass(p, &n);
	if (n)
		needs |= POLICY_NEEDS_MNT_NS;
	for (i = 0; i < policy_rule_count(p); i++)
		if (!policy_rule_info(p, i, &ri) && ri.n_cgroups) {
			needs |= POLICY_NEEDS_CGROUP;
			break;
		}
	return needs;
}

/* What is known of the daemon's policy, taken again when it was reloaded (its digest changed). */
static void global_known(struct eg_sessions *s, const struct eg_policy *g)
{
	const char *sha = policy_sha256(g);
	size_t n;

	if (!strcmp(sha, s->global_needs_sha))
		return;
	s->global_needs = policy_needs(g);
	n = policy_content_sizes(g, s->global_sizes, 64);
	s->n_global_sizes = n < 64 ? n : 64;
	snprintf(s->global_needs_sha, sizeof(s->global_needs_sha), "%s", sha);
}

/* What the policies over r's session look at: the daemon's (it may be reloaded), the sessions'. */
static unsigned int chain_needs(struct eg_sessions *s, struct eg_session *se)
{
	const struct eg_policy *g = *s->o.global;
	unsigned int needs = 0;
	struct eg_session *x;

	if (g) {
		global_known(s, g);
		needs |= s->global_needs;
	}
	for (x = se; x; x = x->parent) {
		if (!x->policy)
			continue;
		if (!x->needs_known) {
			x->needs = policy_needs(x->policy);
			x->needs_known = true;
		}
		needs |= x->needs;
	}
	return needs;
}

/*
 * The task's cgroup and mount namespace, read only when a rule looks at
 * them (on most execs none does; a refusal's record reads the cgroup).
 */
static void facts_for_policy(struct eg_sessions *s, struct exec_request *r)
{
	unsigned int needs = chain_needs(s, r->session);

	if (needs & POLICY_NEEDS_CGROUP)
		request_cgroup(r);
	/* rules scoped to cgroups judge the depth in a container: is it in one? */
	if ((needs & POLICY_NEEDS_CGROUP) && s->o.host_pid_ns) {
		char path[64];
		struct stat st;

		snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)r->tid);
		if (!stat(path, &st) && st.st_ino != s->o.host_pid_ns) {
			r->in_container = true;
			r->container_depth = r->task.cont_pidns == (uint32_t)st.st_ino ?
					     r->task.container_depth + 1 : 0;
		}
	}
	if ((needs & POLICY_NEEDS_MNT_NS) && s->o.host_mnt_ns) {
		char path[64];
		struct stat st;

		snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)r->tid);
		r->foreign_ns = !stat(path, &st) && st.st_ino != s->o.host_mnt_ns;
	}
}

/* ---- judging ----------------------------------------------------------------- */

/*
 * One program under one policy. host: the daemon's policy, which judges the
 * host's depth (nothing a user starts resets it); a session's policy judges
 * the depth from the session's command.
 */
static void judge_one(const struct eg_policy *p, struct exec_request *r, const struct eg_program *pr,
		      bool host, struct eg_eval_budget *budget, struct eg_verdict *acc, bool *first)
{
	struct eg_exec_req req = {};
	struct eg_verdict v;

	req.filename = pr->path;
	req.requested = pr->requested;
	req.argv = (const char *const *)pr->argv;
	req.argc = pr->argc;
	req.depth = host ? r->depth : r->session_depth;
	req.depth_known = host ? r->depth_known : true;
	req.in_container = r->in_container;
	req.container_depth = r->container_depth;
	req.cgroup = r->cgroup[0] ? r->cgroup : NULL;
	req.euid = r->euid;
	req.dev = pr->dev;
	req.ino = pr->ino;
	/* the content, as a worker read it: nothing is read here, in the loop */
	if (pr->hashed) {
		req.size = pr->size;
		req.content_sha = pr->sha256;
	}
	req.foreign_ns = r->foreign_ns;
	req.truncated = r->argv_trunc;
	req.apply_on_truncated = true;
	req.budget = budget;
	/*
	 * The daemon's policy knows agent contexts: the one the task is in
	 * (the kernel's, inherited), or the one this program's identity
	 * enters; the shells in a row as the kernel counts them.
	 */
	if (host && policy_context_count(p)) {
		uint32_t id = policy_context_identity(p, &req);

		if (id && id != r->task.context) {
			req.context = id;
			req.context_depth = 0;
		} else if (r->task.context) {
			req.context = r->task.context;
			req.context_depth = r->task.context_depth + 1;
		}
		req.shells = policy_is_shell(pr->path) ? r->task.shells + 1u : 0;
	}
	policy_eval(p, &req, &v);
	if (*first) {
		*acc = v;
		*first = false;
	} else {
		policy_verdict_merge(acc, &v);
	}
}

/*
 * Every program of the exec, under every policy that covers the session:
 * the daemon's, then each session's from the outermost in. The strongest
 * verdict stands (a session policy can only add refusals). A restricted
 * session refuses every exec below its own command.
 */
static void judge(struct eg_sessions *s, struct exec_request *r, struct eg_verdict *ret)
{
	const struct eg_policy *chain[64];
	struct eg_eval_budget budget = {};
	struct eg_session *x;
	unsigned int n = 0, i, k;
	bool first = true, restricted = false;

	if (*s->o.global)
		chain[n++] = *s->o.global;
	for (x = r->session; x; x = x->parent)
		restricted |= x->restricted;
	memset(ret, 0, sizeof(*ret));
	ret->decision = EG_DECISION_ALLOW;
	ret->rule_index = -1;
	{
		struct eg_session *stack[63];
		unsigned int m = 0;

		for (x = r->session; x; x = x->parent) {
			if (!x->policy)
				continue;
			if (m == 63) {
				/* every policy above must judge: one that is left out would be weakened */
				ret->decision = EG_DECISION_DENY;
				ret->rule = "on_error";
				ret->message = "more nested session policies than the supervisor evaluates (63)";
				return;
			}
			stack[m++] = x;
		}
		while (m && n < 64)
			chain[n++] = stack[--m]->policy;
	}
	/* restricted: nothing below the session's own command (its depth, not the host's) */
	if (restricted && r->session_depth >= 1) {
		ret->decision = EG_DECISION_DENY;
		ret->rule = "restricted";
		ret->message = "restricted session: only the session's command runs, external commands are refused";
		return;
	}
	if (!n)
		return;
	/*
	 * A program of a size the daemon's policy names by content must have
	 * been hashed by the worker: unread (a policy reloaded meanwhile, more
	 * sizes than a request carries, a file root cannot read) it could be a
	 * copy of a denied one. Nothing is read here: refused.
	 */
	for (k = 0; *s->o.global && k < r->plan.n; k++) {
		const struct eg_program *pr = &r->plan.prog[k];

		if (!pr->hashed && policy_wants_size(*s->o.global, pr->size)) {
			ret->decision = EG_DECISION_DENY;
			ret->rule = "on_error";
			ret->message = "the program has the size of a file the policy names, and its content "
				       "could not be compared";
			return;
		}
	}
	/* a loader asked for a program by a name it looks up itself: which file is not known */
	if (r->plan.loader == EG_LOADER_UNPINNED) {
		ret->decision = EG_DECISION_DENY;
		ret->rule = "loader";
		ret->message = "the dynamic loader was asked for a program this supervisor cannot pin "
			       "(a bare name, or a file that is not there): name it by its path";
		return;
	}
	for (i = 0; i < n; i++) {
		bool host = *s->o.global && i == 0;

		for (k = 0; k < r->plan.n; k++)
			judge_one(chain[i], r, &r->plan.prog[k], host, &budget, ret, &first);
		if (r->plan.loader == EG_LOADER_TARGET)
			judge_one(chain[i], r, &r->plan.target, host, &budget, ret, &first);
	}
}

static const char *action_of(enum eg_decision d)
{
	switch (d) {
	case EG_DECISION_AUDIT: return "audited";
	case EG_DECISION_APPROVAL: return "approved";
	default: return "allowed";
	}
}

/* ---- refusals a shell's PATH search repeats ------------------------------------ */

static uint64_t argv_hash(const struct exec_request *r)
{
	uint64_t h = 1469598103934665603ull;
	unsigned int i;
	const char *p;

	for (i = 0; i < r->argc; i++) {
		for (p = r->argv[i]; *p; p++)
			h = (h ^ (unsigned char)*p) * 1099511628211ull;
		h = (h ^ 0xff) * 1099511628211ull;
	}
	return h;
}

void refusal_note(struct eg_sessions *s, const struct exec_request *r, const char *rule,
		  const char *message, const char *action)
{
	struct refusal *f = &s->refusals[s->next_refusal++ % REFUSALS_MAX];
	const struct eg_program *p = r->planned && !r->plan.err ? exec_plan_final(&r->plan) : NULL;

	if (!p)
		return;
	f->tid = r->tid;
	f->session = r->session->id;
	f->dev = p->dev;
	f->ino = p->ino;
	f->argv_hash = argv_hash(r);
	f->at_ns = eg_mono_ns();
	snprintf(f->rule, sizeof(f->rule), "%s", rule ? rule : "");
	snprintf(f->message, sizeof(f->message), "%s", message ? message : "");
	snprintf(f->action, sizeof(f->action), "%s", action);
}

/* The same thread asking again for the same file and argv, just refused. */
static const struct refusal *refused_recently(struct eg_sessions *s, const struct exec_request *r)
{
	const struct eg_program *p = exec_plan_final(&r->plan);
	uint64_t now = eg_mono_ns(), h = argv_hash(r);
	unsigned int i;

	for (i = 0; i < REFUSALS_MAX; i++) {
		const struct refusal *f = &s->refusals[i];

		if (f->tid == (uint32_t)r->tid && f->session == r->session->id && f->dev == p->dev &&
		    f->ino == p->ino && f->argv_hash == h && now - f->at_ns < REFUSAL_TTL_NS)
			return f;
	}
	return NULL;
}

/* ---- one notification ------------------------------------------------------ */

static void deny_with(struct eg_sessions *s, struct exec_request *r, const struct eg_verdict *v)
{
	char line[1024];

	snprintf(line, sizeof(line), "execgate: denied: %s (rule %s)\n",
		 v->message ? v->message : "refused by policy", v->rule ? v->rule : "default");
	request_deny(s, r, line);
	refusal_note(s, r, v->rule, v->message, "blocked");
	verdict_put(s, r->tid, r->session->id, eg_decision_name(v->decision), "blocked", v->rule,
		    v->message, NULL, 0, 0);
	emit_blocked(s, r, v, "blocked", NULL);
	s->st.denied++;
	r->session->denied++;
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

bool request_take(struct eg_sessions *s, struct eg_session *se, struct exec_request *r)
{
	const struct seccomp_notif *req = r->req;
	struct eg_verdict v = {};
	struct eg_session *own;

	r->listener = se->listener;
	r->session = se;
	s->st.execs++;
	se->execs++;

	/* only 64-bit native execs: anything else is refused, never guessed at */
	if (req->data.arch != AUDIT_ARCH_X86_64 ||
	    (req->data.nr != __NR_execve && req->data.nr != __NR_execveat)) {
		v = (struct eg_verdict){ .decision = EG_DECISION_DENY, .rule = "unsupported",
					 .message = "32-bit and x32 execs are not supported in sessions" };
		r->depth = -1;
		deny_with(s, r, &v);
		goto done;
	}
	own = r->rc_facts ? NULL : session_find(s, r->task.session);
	for (struct eg_session *x = own; x && x != se; x = x->parent)
		if (!x->parent)
			own = NULL;	/* not inside this listener's session */
	if (!own) {
		v = (struct eg_verdict){ .decision = EG_DECISION_DENY, .rule = "membership",
					 .message = "the kernel does not know this task as a member of the session" };
		deny_with(s, r, &v);
		goto done;
	}
	r->session = own;
	r->depth = (r->task.flags & EG_TASK_KNOWN) ? r->task.depth + 1 : 0;
	r->depth_known = r->task.flags & EG_TASK_DEPTH_KNOWN;
	/* a session's command is 0 (its launcher was -1), below it 1 and more */
	r->session_depth = (r->task.flags & EG_TASK_SESSION_DEPTH) ? r->task.session_depth + 1 : 0;
	/* the first exec on a new listener is its launcher's: anything else breaks the protocol */
	if (!se->first_seen) {
		se->first_seen = true;
		if (r->tgid != se->launcher) {
			se->compromised = true;
			p_warn("session s-%x: the first exec came from pid %d, not its launcher %d: refusing all",
			       se->id, (int)r->tgid, (int)se->launcher);
		}
	}
	if (se->compromised) {
		v = (struct eg_verdict){ .decision = EG_DECISION_DENY, .rule = "protocol",
					 .message = "this session's listener was not installed by its launcher" };
		deny_with(s, r, &v);
		goto done;
	}
	{
		const struct seccomp_data *d = &req->data;
		uint32_t argc, bytes;

		limits(s, r->session, &argc, &bytes);
		r->execveat = d->nr == __NR_execveat;
		r->dirfd_num = r->execveat ? (int)d->args[0] : AT_FDCWD;
		r->at_flags = r->execveat ? (int)d->args[4] : 0;
		r->max_argc = argc;
		r->max_argv_bytes = bytes;
	}
	facts_for_policy(s, r);
	/* the worker hashes a program of a size the daemon's policy names by content (known just now) */
	if (*s->o.global) {
		memcpy(r->content_sizes, s->global_sizes, s->n_global_sizes * sizeof(uint64_t));
		r->n_content_sizes = s->n_global_sizes;
	}
	return true;
done:
	request_free(r);
	return false;
}

/* A notification the loop took from a listener (no receiver, or the receiver is stuck). */
static void handle(struct eg_sessions *s, struct eg_session *se, struct seccomp_notif *req)
{
	struct exec_request *r = request_new(s, req);

	if (!r) {
		struct exec_request tmp = { .listener = se->listener, .id = req->id, .pidfd = -1 };

		request_deny(s, &tmp, NULL);
		free(req);
		return;
	}
	/* memory and files the session controls: read and looked up off the loop */
	if (request_take(s, se, r))
		offload_submit(s, r, se);
}

void request_work(const struct eg_roots *roots, struct exec_request *r)
{
	r->rc_read = read_request(r);
	r->rc_plan = r->rc_read ? 0 : plan_request(roots, r);
}

void request_finish(struct eg_sessions *s, struct exec_request *r)
{
	struct eg_verdict v = {};
	int rc = r->rc_read;

	if (rc == -ESRCH)
		goto done;		/* gone: nobody to answer */
	if (rc) {
		/* unreadable memory, a path longer than PATH_MAX: the kernel says so itself */
		if (still_valid(r))
			request_let_fail(s, r, rc == -ENAMETOOLONG ? -ENAMETOOLONG : -EFAULT);
		goto done;
	}
	rc = r->rc_plan;
	/*
	 * Everything read so far (memory, /proc/TID, the pidfd) was the
	 * target's only if it still waits in this very exec: one check after
	 * the last read, before anything is believed or answered.
	 */
	if (!still_valid(r))
		goto done;
	if (approval_rejoin(s, r) > 0) {
		r = NULL;		/* the parked request took it over */
		goto done;
	}
	if (rc) {
		/* the exec will fail: the kernel fails it (and the tracer records it) */
		request_let_fail(s, r, rc);
		goto done;
	}
	/* the next PATH entry of a shell's search, for the file just refused: no second question */
	{
		const struct refusal *f = refused_recently(s, r);

		if (f) {
			struct eg_verdict same = { .decision = EG_DECISION_DENY, .rule = f->rule,
						   .message = f->message, .rule_index = -1 };

			request_deny(s, r, NULL);
			verdict_put(s, r->tid, r->session->id, "deny", f->action, f->rule, f->message, NULL, 0, 0);
			emit_blocked(s, r, &same, f->action, NULL);
			s->st.denied++;
			r->session->denied++;
			goto done;
		}
	}
	judge(s, r, &v);
	switch (v.decision) {
	case EG_DECISION_DENY:
	case EG_DECISION_ERROR:
		deny_with(s, r, &v);
		break;
	case EG_DECISION_APPROVAL:
		approval_park(s, r, &v);
		r = NULL;
		break;
	default:
		if (request_allow(s, r) == 0) {
			uint64_t seq = verdict_put(s, r->tid, r->session->id, eg_decision_name(v.decision),
						   action_of(v.decision), v.rule, v.message, NULL,
						   s->ticket->dev, s->ticket->ino);
			struct eg_answer *held = held_for(s, r);

			s->st.allowed++;
			if (held) {
				held->verdict_seq = seq;
				held->allowed = true;
			}
		}
		break;
	}
done:
	request_free(r);
}

/*
 * A refusal before (or without) what a worker reads: the record names the
 * task, its session and depth, not the program (the worker may still be
 * writing r's path and argv).
 */
void request_refuse_early(struct eg_sessions *s, struct exec_request *r, const struct eg_verdict *v)
{
	struct exec_request *tmp = malloc(sizeof(*tmp));

	if (!tmp) {
		struct seccomp_notif_resp resp = { .id = r->id, .error = -EACCES };

		seccomp_notify_respond(r->listener, &resp);
		return;
	}
	memset(tmp, 0, offsetof(struct exec_request, plan));
	tmp->received_ns = r->received_ns;
	tmp->session = r->session;
	tmp->listener = r->listener;
	tmp->id = r->id;
	tmp->tid = r->tid;
	tmp->tgid = r->tgid;
	tmp->pidfd = -1;
	tmp->depth = r->depth;
	tmp->depth_known = r->depth_known;
	tmp->session_depth = r->session_depth;
	tmp->euid = r->euid;
	tmp->foreign_ns = r->foreign_ns;
	if (r->cgroup_read) {
		memcpy(tmp->cgroup, r->cgroup, sizeof(tmp->cgroup));
		tmp->cgroup_read = true;
	}
	deny_with(s, tmp, v);
	if (tmp->pidfd >= 0)
		close(tmp->pidfd);
	free(tmp);
}

void supervise_listener(struct eg_watch *w, int fd, uint32_t events, void *arg)
{
	struct eg_session *se = arg;
	struct eg_sessions *s = se->owner;
	struct seccomp_notif *req = NULL;
	struct seccomp_notif_resp *resp = NULL;

	(void)w;
	if (events & EPOLLIN) {
		/* its receiver takes them (an event from before it did, or since it is back) */
		if (!se->loop_receives)
			return;
		if (seccomp_notify_alloc(&req, &resp))
			return;
		free(resp);
		/* libseccomp 2.5: the kernel wants the buffer zeroed (ENVIRONMENT.md) */
		memset(req, 0, sizeof(*req));
		if (seccomp_notify_receive(fd, req)) {
			/* the target withdrew (a signal) between poll and receive */
			free(req);
			return;
		}
		handle(s, se, req);
		/*
		 * Its receiver left, idle: this one was the loop's, the next is a
		 * new receiver's (started only now, so that it cannot take the
		 * notification the loop was about to receive).
		 */
		if (!se->rx && !se->ended && se->listener >= 0)
			receiver_start(s, se, se->listener);
		return;
	}
	if (events & (EPOLLHUP | EPOLLERR))
		session_end(s, se, "every process of the session exited");
}
