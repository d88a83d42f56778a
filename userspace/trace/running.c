// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What ran before the daemon: at start it reads the processes already
 * running in /proc and gives the kernel's task storage what the tracer
 * could not see.
 *
 * - A process the kernel knows nothing of gets a depth inferred from the
 *   process tree (init 0, each child one more), its start as an exec id,
 *   and EG_TASK_INFERRED: its children's records say depth_inferred and
 *   name it as their parent.
 * - A process of one of the policy's agent contexts (its own program is an
 *   identity, or an ancestor's is) enters that context, marked inferred
 *   (context_ktime 0: its identity's exec was not seen), so an agent
 *   started before the daemon is under its context from its next exec.
 *
 * What the kernel already knows is never overwritten (BPF_NOEXIST), except
 * a context added to a known task that has none. A pidfd names a process
 * (its leader's storage); what its other threads fork copies their own
 * storage, so they get the same, in the kernel (trace/amend.c): a thread
 * with no storage the leader's entry, a thread with storage and no context
 * the context.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/nsfs.h>
#include <bpf/bpf.h>
#include "execgate.h"
#include "trace/running.h"
#include "trace/amend.h"
#include "util/fileid.h"

#define SEED_MAX_PROCS	(1u << 20)
#define SEED_ARGV_MAX	(64u << 10)
#define SEED_ROUNDS	3		/* a context lost to an exec is asked again */
#define SEED_PASSES	8		/* walks of /proc, while one puts a process in a context */

struct sproc {
	pid_t pid, ppid;
	uint64_t start_ns;		/* CLOCK_BOOTTIME, from /proc/PID/stat */
	unsigned int threads;		/* when read */
	bool kthread;
	uint32_t pidns;			/* its pid namespace (inode), 0: not read */
	bool pidns_root;		/* one root made (owned by the initial user namespace): a container's */
	bool known;			/* the kernel has its storage */
	bool done;			/* depth and context computed */
	bool visiting;
	struct eg_task t;		/* the kernel's, or what we infer */
	uint32_t ctx;			/* context: from the kernel, or inferred */
	int32_t ctx_depth;
	pid_t ctx_pid;			/* its identity's process */
	bool ctx_new;			/* inferred here */
};

struct seeder {
	struct sproc *v;
	size_t n, cap;
	int map_fd;
	const struct eg_policy *p;
	long hz;
	char *buf;			/* cmdline */
	struct task_amender *amender;	/* opened at its first use */
	int amender_err;
	uint32_t host_pidns, host_userns;	/* ours, the host's */
};

static int by_pid(const void *a, const void *b)
{
	const struct sproc *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

static struct sproc *find(struct seeder *s, pid_t pid)
{
	struct sproc key = { .pid = pid };

	return bsearch(&key, s->v, s->n, sizeof(*s->v), by_pid);
}

/* ppid, threads, flags (PF_KTHREAD) and start time from /proc/PID/stat; -1 when gone. */
static int read_stat(struct seeder *s, struct sproc *pr)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	unsigned int flags = 0, threads = 0;
	int ppid = 0, fd, i;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pr->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* the command name may hold anything, ')' too: fields start after the last ')' */
	p = strrchr(buf, ')');
	if (!p)
		return -1;
	p++;
	/* field 3 state, 4 ppid, ... 9 flags, ... 20 num_threads, ... 22 starttime */
	for (i = 3; i <= 22 && *p; i++) {
		while (*p == ' ')
			p++;
		if (i == 4)
			ppid = atoi(p);
		else if (i == 9)
			flags = (unsigned int)strtoul(p, NULL, 10);
		else if (i == 20)
			threads = (unsigned int)strtoul(p, NULL, 10);
		else if (i == 22)
			start = strtoull(p, NULL, 10);
		while (*p && *p != ' ')
			p++;
	}
	pr->ppid = ppid;
	pr->threads = threads;
	pr->kthread = (flags & 0x00200000) || pr->pid == 2 || ppid == 2;	/* PF_KTHREAD */
	pr->start_ns = s->hz > 0 ? start * (1000000000ull / (uint64_t)s->hz) : 0;
	return 0;
}

static uint32_t ns_ino(const char *path)
{
	struct stat st;

	return stat(path, &st) ? 0 : (uint32_t)st.st_ino;
}

/*
 * pr's pid namespace, and whether root made it (its owner is the initial
 * user namespace), as the kernel tells a container's (bpf/execgate.bpf.h,
 * task_pid_ns_by_root).
 */
static void read_pidns(struct seeder *s, struct sproc *pr)
{
	char path[64];
	struct stat st;
	int fd, ufd;

	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pr->pid);
	pr->pidns = ns_ino(path);
	if (!pr->pidns || pr->pidns == s->host_pidns)
		return;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ufd = ioctl(fd, NS_GET_USERNS);
	if (ufd >= 0) {
		pr->pidns_root = !fstat(ufd, &st) && (uint32_t)st.st_ino == s->host_userns;
		close(ufd);
	}
	close(fd);
}

static int pidfd_of(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/*
 * The program a process runs, as an identity sees it: /proc/PID/exe (its
 * resolved path, dev and inode), its argv and effective uid.
 */
static uint32_t identity_of(struct seeder *s, const struct sproc *pr)
{
	char path[64], exe_path[64], exe[PATH_MAX], line[256];
	const char *argv[256];
	struct eg_exec_req req = {};
	struct stat st;
	unsigned int argc = 0;
	uint32_t id = 0;
	ssize_t n, len = 0;
	FILE *f;
	int fd;

	snprintf(exe_path, sizeof(exe_path), "/proc/%d/exe", (int)pr->pid);
	n = readlink(exe_path, exe, sizeof(exe) - 1);
	if (n <= 0)
		return 0;
	exe[n] = '\0';
	if (stat(exe_path, &st))
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pr->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	while (len < (ssize_t)SEED_ARGV_MAX - 1 && (n = read(fd, s->buf + len, SEED_ARGV_MAX - 1 - len)) > 0)
		len += n;
	close(fd);
	s->buf[len] = '\0';
	for (ssize_t i = 0; i < len && argc < sizeof(argv) / sizeof(argv[0]) - 1; i += strlen(s->buf + i) + 1)
		argv[argc++] = s->buf + i;
	argv[argc] = NULL;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pr->pid);
	f = fopen(path, "re");
	if (f) {
		while (fgets(line, sizeof(line), f)) {
			unsigned int r, e;

			if (sscanf(line, "Uid: %u %u", &r, &e) == 2) {
				req.euid = e;
				break;
			}
		}
		fclose(f);
	}
	req.filename = exe;
	req.argv = argv;
	req.argc = argc;
	req.depth_known = true;
	req.dev = eg_kdev(st.st_dev);
	req.ino = st.st_ino;
	req.size = (uint64_t)st.st_size;
	req.content_path = exe_path;	/* its image, while it lives */
	id = policy_context_identity(s->p, &req);
	/* an interpreter's script, given as its first argument that is not an option */
	if (!id && policy_is_interpreter(exe)) {
		unsigned int i;

		for (i = 1; i < argc && argv[i][0] == '-'; i++)
			;
		if (i < argc && argv[i][0] == '/') {
			req.filename = argv[i];
			req.requested = NULL;
			req.argv = argv + i;
			req.argc = argc - i;
			req.dev = 0;
			req.ino = 0;
			req.size = 0;
			req.content_path = NULL;
			id = policy_context_identity(s->p, &req);
		}
	}
	return id;
}

/* Depth and context of pr, from its parent's (computed first). */
static void settle(struct seeder *s, struct sproc *pr, unsigned int level)
{
	struct sproc *pa;
	uint32_t own;

	if (pr->done || pr->visiting)
		return;
	pr->visiting = true;
	pa = pr->ppid > 0 && pr->ppid != pr->pid ? find(s, pr->ppid) : NULL;
	if (pa && level < 4096)
		settle(s, pa, level + 1);
	if (!pr->known) {
		pr->t.flags = EG_TASK_KNOWN | EG_TASK_DEPTH_KNOWN | EG_TASK_INFERRED;
		pr->t.depth = pa && pa->done && !pa->kthread ? pa->t.depth + 1 : 0;
		pr->t.exec_tgid = (uint32_t)pr->pid;
		pr->t.exec_ktime = pr->start_ns;
		/*
		 * A container's processes count their own depth from its first
		 * (0), as the kernel counts them from an exec it saw: a task with
		 * no container count is judged at container depth 0 at each exec,
		 * so every process of a container older than the daemon ran
		 * everything "direct".
		 */
		if (pr->pidns_root) {
			pr->t.cont_pidns = pr->pidns;
			pr->t.container_depth = pa && pa->done && !pa->kthread && pa->t.cont_pidns == pr->pidns ?
						pa->t.container_depth + 1 : 0;
		}
	}
	if (s->p && policy_context_count(s->p)) {
		own = pr->known && pr->t.context ? 0 : identity_of(s, pr);
		if (pr->known && pr->t.context) {
			pr->ctx = pr->t.context;
			pr->ctx_depth = pr->t.context_depth;
			pr->ctx_pid = (pid_t)pr->t.context_tgid;
		} else if (own) {
			pr->ctx = own;
			pr->ctx_depth = 0;
			pr->ctx_pid = pr->pid;
			pr->ctx_new = true;
		} else if (pa && pa->done && pa->ctx) {
			pr->ctx = pa->ctx;
			pr->ctx_depth = pa->ctx_depth + 1;
			pr->ctx_pid = pa->ctx_pid;
			pr->ctx_new = true;
		}
	}
	pr->visiting = false;
	pr->done = true;
}

static int scan(struct seeder *s)
{
	struct dirent *de;
	DIR *d = opendir("/proc");

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		struct sproc pr = {};
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0)
			continue;
		pr.pid = (pid_t)pid;
		if (read_stat(s, &pr) || pr.kthread)
			continue;
		read_pidns(s, &pr);
		if (s->n == s->cap) {
			size_t cap = s->cap ? s->cap * 2 : 1024;
			struct sproc *v = cap <= SEED_MAX_PROCS ? realloc(s->v, cap * sizeof(*v)) : NULL;

			if (!v) {
				closedir(d);
				return -ENOMEM;
			}
			s->v = v;
			s->cap = cap;
		}
		s->v[s->n++] = pr;
	}
	closedir(d);
	qsort(s->v, s->n, sizeof(*s->v), by_pid);
	return 0;
}

/*
 * The contexts of processes the kernel knows already, made in the kernel
 * (bpf/amend.bpf.c: a map update would put back what an exec meanwhile
 * wrote), in every thread. An exec that read the task's storage before
 * the change and writes it back after loses it: looked at again, and asked
 * again.
 */
struct seed_ctx {
	pid_t pid;
	uint32_t ctx, ctx_tgid;
	int32_t ctx_depth;
	bool kept;		/* in it already: its other threads only (a daemon before marked leaders alone) */
};

/* The processes a walk put in a context: a second walk may mark one again (its marking lost to an exec). */
struct marked {
	pid_t *v;
	size_t n, cap;
	bool lost;		/* no memory for one: the count stays the walks' sum */
};

static void marked_add(struct marked *m, pid_t pid)
{
	if (m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 64;
		pid_t *v = realloc(m->v, cap * sizeof(*v));

		if (!v) {
			m->lost = true;
			return;
		}
		m->v = v;
		m->cap = cap;
	}
	m->v[m->n++] = pid;
}

static int pid_cmp(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* How many processes the walks put in a context, each once. */
static unsigned int marked_count(struct marked *m, unsigned int sum)
{
	unsigned int n = 0;

	if (m->lost || !m->n)
		return m->lost ? sum : 0;
	qsort(m->v, m->n, sizeof(*m->v), pid_cmp);
	for (size_t i = 0; i < m->n; i++)
		n += !i || m->v[i] != m->v[i - 1];
	return n;
}

static struct task_amender *seeder_amender(struct seeder *s)
{
	if (!s->amender && !s->amender_err)
		s->amender_err = task_amender_open(s->map_fd, &s->amender);
	return s->amender;
}

/*
 * The threads of a process the kernel knew nothing of, which clone()d
 * before the tracer ran: the entry t just given to its leader, so that
 * what they fork is not outside the leader's context, or of unknown depth.
 */
static void seed_threads(struct seeder *s, int pidfd, pid_t pid, const struct eg_task *t,
			 struct seed_stats *ret)
{
	struct eg_amend a = { .op = EG_AMEND_FILL, .exec_ktime = t->exec_ktime };

	task_amend_inherit(&a, t);
	if (!seeder_amender(s) || task_amender_apply(s->amender, pidfd, pid, &a) || a.missed)
		ret->failed++;
}

static int seed_contexts(struct seeder *sr, const struct seed_ctx *v, size_t n, struct seed_stats *ret,
			 struct marked *marked)
{
	struct task_amender *sd;
	int map_fd = sr->map_fd, err = 0;
	size_t i;

	if (!n)
		return 0;
	sd = seeder_amender(sr);
	if (!sd) {
		ret->failed += n;
		return sr->amender_err;
	}
	for (i = 0; i < n; i++) {
		int fd = pidfd_of(v[i].pid), round;
		bool done = false, gone = false, missed = false;

		if (fd < 0)
			continue;	/* gone since */
		for (round = 0; round < SEED_ROUNDS && !done; round++) {
			struct eg_amend s = { .op = EG_AMEND_CONTEXT };
			struct eg_task t;

			/* on the image there now (a pid since reused is another's) */
			if (bpf_map_lookup_elem(map_fd, &fd, &t))
				break;
			s.exec_ktime = t.exec_ktime;
			/* a thread with no storage gets the leader's entry, in the leader's context if it has one */
			task_amend_inherit(&s, &t);
			if (!t.context) {
				s.task.context = v[i].ctx;
				s.task.context_depth = v[i].ctx_depth;
				s.task.context_ktime = 0;	/* inferred: its identity's exec not seen */
				s.task.context_tgid = v[i].ctx_tgid;
			}
			err = task_amender_apply(sd, fd, v[i].pid, &s);
			if (err)
				break;
			gone = !s.result;
			missed = s.missed;
			if (s.result == EG_AMEND_CHANGED)
				continue;	/* an exec since the lookup: again */
			if (s.result != EG_AMEND_DONE)
				break;
			/* else lost to an exec that read the storage before and wrote it after: again */
			done = !bpf_map_lookup_elem(map_fd, &fd, &t) && t.context;
		}
		close(fd);
		if (err) {
			ret->failed += n - i;
			break;
		}
		if (done && !v[i].kept) {
			ret->contexts++;
			marked_add(marked, v[i].pid);
		}
		if ((!done && !gone) || missed)
			ret->failed++;
	}
	return err;
}

static int seed_pass(int map_fd, const struct eg_policy *p, struct seed_stats *ret, struct marked *marked)
{
	struct seeder s = { .map_fd = map_fd, .p = p };
	struct seed_ctx *seeds = NULL;
	size_t i, nseeds = 0;
	int err;

	memset(ret, 0, sizeof(*ret));
	s.hz = sysconf(_SC_CLK_TCK);
	s.host_pidns = ns_ino("/proc/self/ns/pid");
	s.host_userns = ns_ino("/proc/self/ns/user");
	s.buf = malloc(SEED_ARGV_MAX);
	if (!s.buf)
		return -ENOMEM;
	err = scan(&s);
	if (err)
		goto out;
	seeds = calloc(s.n ? s.n : 1, sizeof(*seeds));
	if (!seeds) {
		err = -ENOMEM;
		goto out;
	}
	/* what the kernel knows */
	for (i = 0; i < s.n; i++) {
		int fd = pidfd_of(s.v[i].pid);

		if (fd < 0)
			continue;
		s.v[i].known = !bpf_map_lookup_elem(map_fd, &fd, &s.v[i].t) && (s.v[i].t.flags & EG_TASK_KNOWN);
		if (!s.v[i].known)
			memset(&s.v[i].t, 0, sizeof(s.v[i].t));
		close(fd);
	}
	for (i = 0; i < s.n; i++)
		settle(&s, &s.v[i], 0);
	for (i = 0; i < s.n; i++) {
		struct sproc *pr = &s.v[i];
		struct eg_task t;
		int fd;

		ret->scanned++;
		if (pr->known) {
			/*
			 * A known task: its context only, made in the kernel below,
			 * in every thread. One in its context already: its other
			 * threads (a daemon before this one marked the leader alone).
			 */
			if (pr->ctx_new || (pr->ctx && pr->threads > 1))
				seeds[nseeds++] = (struct seed_ctx){ .pid = pr->pid, .ctx = pr->ctx,
								     .ctx_tgid = (uint32_t)pr->ctx_pid,
								     .ctx_depth = pr->ctx_depth,
								     .kept = !pr->ctx_new };
			continue;
		}
		fd = pidfd_of(pr->pid);
		if (fd < 0)
			continue;	/* gone since */
		t = pr->t;
		if (pr->ctx) {
			t.context = pr->ctx;
			t.context_depth = pr->ctx_depth;
			t.context_ktime = 0;
			t.context_tgid = (uint32_t)pr->ctx_pid;
		}
		/* an exec since the scan made its own: that one is the truth */
		if (bpf_map_update_elem(map_fd, &fd, &t, BPF_NOEXIST)) {
			if (errno != EEXIST)
				ret->failed++;
		} else {
			ret->inferred++;
			if (pr->threads > 1)
				seed_threads(&s, fd, pr->pid, &t, ret);
			if (pr->ctx) {
				ret->contexts++;
				marked_add(marked, pr->pid);
			}
		}
		close(fd);
	}
	err = seed_contexts(&s, seeds, nseeds, ret, marked);
out:
	task_amender_close(s.amender);
	free(seeds);
	free(s.v);
	free(s.buf);
	return err;
}

int tasks_seed(int map_fd, const struct eg_policy *p, struct seed_stats *ret)
{
	struct marked marked = {};
	struct seed_stats pass;
	int err, i;

	err = seed_pass(map_fd, p, ret, &marked);
	/*
	 * A process an agent forked after the walk read /proc and before the
	 * agent was marked copied storage with no context: walked again, its
	 * parent is in one now. Again until a walk marks no one (its own
	 * forks since inherit the context in the kernel).
	 */
	for (i = 1; !err && ret->contexts && p && policy_context_count(p) && i < SEED_PASSES; i++) {
		err = seed_pass(map_fd, p, &pass, &marked);
		ret->inferred += pass.inferred;
		ret->contexts += pass.contexts;
		ret->failed = pass.failed;	/* what the last walk could not do */
		if (!pass.contexts)
			break;
	}
	ret->contexts = marked_count(&marked, ret->contexts);
	free(marked.v);
	return err;
}
