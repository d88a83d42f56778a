// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * spawn: the exec load of the overhead benchmark (tools/bench/run.sh).
 *
 *   spawn -n N -p P [-q] [-i US] [-s|-S|-F [-w US]]
 *
 * P worker threads each run N times posix_spawn("/bin/true", {"true", "a",
 * "b", "c", "d"}) followed by waitpid(), and the whole is timed with
 * CLOCK_MONOTONIC from the moment every worker is ready to the moment the
 * last one is done. The result is one line on stdout, for scripts:
 *
 *   elapsed_ns=1482331090 execs=2000 rate=1349.23 pid=4242 cpu_ns=1650000000 p50_ns=690000 ...
 *
 * pid is this process: the children's parent, so a reader of an exec log
 * can tell this run's execs from the rest of the host's. cpu_ns is the CPU
 * time (user + system) this process and its children used while timed: the
 * runner subtracts it from the machine's busy time to see how much of the
 * machine something else was using meanwhile. p50_ns and p99_ns are the
 * quantiles of one exec's time (posix_spawn to waitpid's return); with -s
 * or -S, sup_cpu_ns is the CPU time of the supervising thread (or process)
 * alone. With -i US each worker sleeps US microseconds after each exec (a
 * low exec rate: elapsed time is then mostly sleep). Any failed spawn or
 * child that does not exit 0 aborts the run with a message and exit 1: a
 * benchmark that quietly did less work would report a better time.
 *
 * With -s the workers' execs are supervised by this process itself, the
 * least a seccomp supervisor can do: a filter of five instructions traps
 * execve and execveat with a user-notify listener, and a thread of this process answers
 * each notification at once with CONTINUE (blocking receive, synchronous
 * wakeups where the kernel has them), reading, resolving and logging
 * nothing. With -S that supervisor is a child process instead, as the
 * supervisor of another program is: the workers' children trap before
 * their exec, while they still share this process's memory, so a thread
 * here is spared the switch of page tables a real supervisor makes at
 * each hand-over (sup_cpu_ns is then that process's CPU time).
 * tools/bench/sessions.py runs -S beside a real session to show the
 * floor under the supervisor's overhead on this machine, and -s beside
 * it. With -w US the supervisor first spins for US microseconds (CPU
 * busy, nothing else done), as a supervisor would that takes that long to
 * decide: what a given supervisor latency costs the loop here, whatever
 * the work is.
 *
 * With -F the supervisor (a process of its own, as -S) makes, before each
 * answer, the system calls the daemon makes for an allowed exec, each once
 * and with nothing around them: the facts program's run (here a BPF
 * program that returns at once, run the same way, BPF_PROG_TEST_RUN), the
 * read of the page that holds the path and argv's array
 * (process_vm_readv), the program opened from the root with openat2
 * (RESOLVE_IN_ROOT), its identity (fstat) and its name (readlinkat of
 * /proc/self/fd), its close, and a ticket written into a hash map. It
 * judges, logs and remembers nothing: the floor of the same facts, against
 * which the rest of the daemon's CPU per exec is its own code.
 *
 * spawn -S [-w US] -- CMD [ARG...] runs one command under that bare
 * supervisor instead of the loop (a real workload: tools/bench/
 * workloads.py runs ./configure so), waits for it, and prints
 *
 *   elapsed_ns=20123456789 status=0 sup_cpu_ns=61234567 notifications=3620
 *
 * notifications counting every execve and execveat the command's tree
 * made, found or not; it exits with the command's status (1 when it was
 * killed by a signal).
 *
 * Threads rather than processes: posix_spawn() freezes only the calling
 * thread (vfork semantics), and waitpid() on a given pid is per child, so
 * workers do not disturb each other, and the setup stays outside the timing.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <pthread.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <bpf/bpf.h>
#include "util/seccomp_notif.h"

#define SPAWN_PATH	"/bin/true"
#define MAX_WORKERS	256

extern char **environ;

struct worker {
	pthread_t thread;
	unsigned long iterations;
	unsigned long done;
	uint64_t *lat;		/* ns per exec, [iterations] */
	int err;		/* 0, or a positive errno of the failed call */
	int status;		/* wait status of a child that failed, or -1 */
	const char *what;	/* the call that failed */
};

static pthread_barrier_t start_barrier;
static uint64_t interval_us;		/* -i: sleep after each exec */
static uint64_t now_ns(void);

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	char *const child_argv[] = { "true", "a", "b", "c", "d", NULL };
	unsigned long i;
	int status, err;
	pid_t pid, got;

	pthread_barrier_wait(&start_barrier);
	for (i = 0; i < w->iterations; i++) {
		uint64_t t0 = now_ns();

		err = posix_spawn(&pid, SPAWN_PATH, NULL, NULL, child_argv, environ);
		if (err) {
			w->err = err;
			w->what = "posix_spawn(" SPAWN_PATH ")";
			break;
		}
		do {
			got = waitpid(pid, &status, 0);
		} while (got < 0 && errno == EINTR);
		if (got < 0) {
			w->err = errno;
			w->what = "waitpid";
			break;
		}
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			w->status = status;
			w->what = SPAWN_PATH;
			break;
		}
		w->lat[w->done++] = now_ns() - t0;
		if (interval_us)
			usleep(interval_us);
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}
static uint64_t supervisor_work_ns;	/* -w: time spent on each notification before the answer */
static clockid_t supervisor_clock;	/* the supervising thread's (or process's) CPU-time clock */
static volatile bool supervisor_clock_set;
static bool supervisor_apart;		/* -S: the supervisor is a process of its own */
static pid_t supervisor_pid;
static uint64_t *supervisor_count;	/* notifications answered (shared with a -S supervisor) */
static bool supervisor_facts;		/* -F: the daemon's system calls before each answer */

/* -F: what the supervisor holds to make them (opened in the supervisor, before its loop) */
struct facts_floor {
	int prog_fd;	/* a syscall program that returns 0 */
	int map_fd;	/* tickets: tid -> 32 bytes */
	int root_fd;	/* / (O_PATH) */
	int self_fd;	/* /proc/self/fd */
};

static int facts_floor_open(struct facts_floor *f)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, popts, .prog_flags = BPF_F_SLEEPABLE);

	f->prog_fd = bpf_prog_load(BPF_PROG_TYPE_SYSCALL, "floor_facts", "GPL", insns, 2, &popts);
	if (f->prog_fd < 0) {
		fprintf(stderr, "spawn: -F: loading a syscall program: %s\n", strerror(-f->prog_fd));
		return -1;
	}
	f->map_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "floor_tickets", 4, 32, 65536, NULL);
	if (f->map_fd < 0) {
		fprintf(stderr, "spawn: -F: a hash map: %s\n", strerror(-f->map_fd));
		return -1;
	}
	f->root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	f->self_fd = open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (f->root_fd < 0 || f->self_fd < 0) {
		fprintf(stderr, "spawn: -F: opening / and /proc/self/fd: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

/* -F: one of each of the daemon's system calls for an allowed execve of req */
static void facts_floor_run(const struct facts_floor *f, const struct seccomp_notif *req)
{
	unsigned char ctx[144] = {}, page[4096], ticket[32] = {};
	uint64_t addr = req->data.args[0], base = addr & ~4095ull;
	struct iovec local = { page, sizeof(page) }, remote = { (void *)(uintptr_t)base, sizeof(page) };
	struct open_how how = { .flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT };
	LIBBPF_OPTS(bpf_test_run_opts, topts, .ctx_in = ctx, .ctx_size_in = sizeof(ctx));
	char path[4097], name[16], link[4096];
	size_t off = addr - base, n;
	struct stat st;
	uint32_t key = req->pid;
	int fd;

	bpf_prog_test_run_opts(f->prog_fd, &topts);
	if (process_vm_readv(req->pid, &local, 1, &remote, 1, 0) != (ssize_t)sizeof(page))
		return;
	n = strnlen((char *)page + off, sizeof(page) - off);
	memcpy(path, page + off, n);
	path[n] = '\0';
	fd = syscall(__NR_openat2, f->root_fd, path, &how, sizeof(how));
	if (fd < 0)
		return;
	if (!fstat(fd, &st)) {
		memcpy(ticket, &st.st_dev, sizeof(st.st_dev));
		memcpy(ticket + 8, &st.st_ino, sizeof(st.st_ino));
	}
	snprintf(name, sizeof(name), "%d", fd);
	if (readlinkat(f->self_fd, name, link, sizeof(link)) < 0)
		ticket[16] = 1;
	close(fd);
	bpf_map_update_elem(f->map_fd, &key, ticket, BPF_ANY);
}

/* -s, -S: answers every trapped execve at once (after -w); runs until the process exits. */
static void *supervisor_run(void *arg)
{
	int fd = (int)(intptr_t)arg;
	struct seccomp_notif req;
	struct seccomp_notif_resp resp;
	struct facts_floor facts;

	if (supervisor_facts && facts_floor_open(&facts))
		_exit(1);
	if (!supervisor_apart && !pthread_getcpuclockid(pthread_self(), &supervisor_clock))
		supervisor_clock_set = true;
	for (;;) {
		memset(&req, 0, sizeof(req));
		if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &req))
			continue;	/* EINTR, or the task died first (ENOENT) */
		if (supervisor_work_ns) {
			uint64_t t0 = now_ns();

			while (now_ns() - t0 < supervisor_work_ns)
				;
		}
		if (supervisor_facts && req.data.nr == __NR_execve)
			facts_floor_run(&facts, &req);
		if (supervisor_count)
			__atomic_add_fetch(supervisor_count, 1, __ATOMIC_RELAXED);
		memset(&resp, 0, sizeof(resp));
		resp.id = req.id;
		resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		if (ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp) && errno != ENOENT)
			fprintf(stderr, "spawn: SECCOMP_IOCTL_NOTIF_SEND: %s\n", strerror(errno));
	}
	return NULL;
}

/*
 * The calling thread (and the threads it creates later) gets the filter;
 * the supervisor thread, created here with the listener, does not need it
 * and never execs. 0, or -1 with a message.
 */
static int supervise_self(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execve, 1, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execveat, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
	pthread_t t;
	int fd, err;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		fprintf(stderr, "spawn: PR_SET_NO_NEW_PRIVS: %s\n", strerror(errno));
		return -1;
	}
	fd = syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (fd < 0) {
		fprintf(stderr, "spawn: seccomp user-notify filter: %s\n", strerror(errno));
		return -1;
	}
	/* the flags are the argument itself; kernels before 6.6 refuse it: usual wakeups */
	ioctl(fd, SECCOMP_IOCTL_NOTIF_SET_FLAGS, (unsigned long)SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP);
	if (supervisor_apart) {
		/*
		 * A process of its own, as a real supervisor is: the trapped
		 * task and its supervisor do not share an address space, so
		 * each hand-over switches page tables. (A posix_spawn child
		 * traps before its exec, still in this process's memory, so a
		 * thread here would save that switch, which no supervisor of
		 * another program can.)
		 */
		supervisor_pid = fork();
		if (supervisor_pid < 0) {
			fprintf(stderr, "spawn: fork: %s\n", strerror(errno));
			return -1;
		}
		if (supervisor_pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() == 1)
				_exit(0);
			supervisor_run((void *)(intptr_t)fd);
			_exit(0);
		}
		close(fd);
		if (!clock_getcpuclockid(supervisor_pid, &supervisor_clock))
			supervisor_clock_set = true;
		return 0;
	}
	err = pthread_create(&t, NULL, supervisor_run, (void *)(intptr_t)fd);
	if (err) {
		fprintf(stderr, "spawn: pthread_create: %s\n", strerror(err));
		return -1;
	}
	pthread_detach(t);
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The supervisor's CPU time so far (-s, -S), or 0 when it cannot be read. */
static uint64_t sup_cpu_ns(void)
{
	struct timespec ts;

	if (!supervisor_clock_set || clock_gettime(supervisor_clock, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* User + system time of this process and of its waited-for children. */
static uint64_t cpu_used_ns(void)
{
	struct rusage self, children;
	uint64_t us = 0;

	if (getrusage(RUSAGE_SELF, &self) == 0)
		us += (uint64_t)(self.ru_utime.tv_sec + self.ru_stime.tv_sec) * 1000000ull +
		      (uint64_t)(self.ru_utime.tv_usec + self.ru_stime.tv_usec);
	if (getrusage(RUSAGE_CHILDREN, &children) == 0)
		us += (uint64_t)(children.ru_utime.tv_sec + children.ru_stime.tv_sec) * 1000000ull +
		      (uint64_t)(children.ru_utime.tv_usec + children.ru_stime.tv_usec);
	return us * 1000;
}

/*
 * spawn -s|-S -- CMD...: CMD under the bare supervisor, its result line.
 * Returns the exit code: the command's status, 1 on a signal or an error.
 */
static int run_command(char **cmd)
{
	uint64_t t0, t1, sup0, sup1;
	pid_t pid;
	int err, st;

	supervisor_count = mmap(NULL, sizeof(*supervisor_count), PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (supervisor_count == MAP_FAILED) {
		fprintf(stderr, "spawn: mmap: %s\n", strerror(errno));
		return 1;
	}
	if (supervise_self())
		return 1;
	sup0 = sup_cpu_ns();
	t0 = now_ns();
	err = posix_spawnp(&pid, cmd[0], NULL, NULL, cmd, environ);
	if (err) {
		fprintf(stderr, "spawn: %s: %s\n", cmd[0], strerror(err));
		return 1;
	}
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "spawn: waitpid: %s\n", strerror(errno));
			return 1;
		}
	}
	t1 = now_ns();
	sup1 = sup_cpu_ns();
	printf("elapsed_ns=%" PRIu64 " status=%d sup_cpu_ns=%" PRIu64 " notifications=%" PRIu64 "\n",
	       t1 - t0, WIFEXITED(st) ? WEXITSTATUS(st) : -1, sup1 - sup0,
	       __atomic_load_n(supervisor_count, __ATOMIC_RELAXED));
	fflush(stdout);
	if (supervisor_pid > 0) {
		kill(supervisor_pid, SIGKILL);
		waitpid(supervisor_pid, NULL, 0);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"usage: %s -n N -p P [-q] [-i US] [-s|-S|-F [-w US]]\n"
		"       %s -s|-S [-w US] -- CMD [ARG...]\n"
		"  -n N  posix_spawn+waitpid iterations per worker (default 1000)\n"
		"  -p P  parallel worker threads (default 1, at most %d)\n"
		"  -q    print only the machine-readable result line\n"
		"  -i US each worker sleeps US microseconds after each exec\n"
		"  -s    supervise the execs here: trap execve (seccomp user-notify)\n"
		"        and answer CONTINUE at once, the least a supervisor costs\n"
		"  -S    as -s, the supervisor a process of its own (not a thread\n"
		"        sharing the trapped tasks' memory before their exec)\n"
		"  -F    as -S, and before each answer make once each the system\n"
		"        calls the daemon makes for an allowed exec (the same facts)\n"
		"  -w US with -s, -S or -F: spin US microseconds before each answer, as a\n"
		"        supervisor that takes that long to decide\n"
		"  -- CMD  run CMD under the supervisor (-s or -S) instead of the loop:\n"
		"        its time, the supervisor's CPU and the notifications it answered\n",
		prog, prog, MAX_WORKERS);
}

static bool parse_ulong(const char *s, unsigned long min, unsigned long max,
			unsigned long *ret)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < min || v > max)
		return false;
	*ret = v;
	return true;
}

int main(int argc, char **argv)
{
	unsigned long iterations = 1000, workers = 1, i, execs = 0;
	struct worker *w = NULL;
	bool quiet = false, failed = false, barrier = false, supervise = false;
	uint64_t t0, t1, elapsed, cpu0, cpu1, sup0 = 0, sup1 = 0, *all = NULL;
	int opt, err, ret = 1;
	unsigned long started = 0;

	while ((opt = getopt(argc, argv, "n:p:qsSFw:i:h")) != -1) {
		switch (opt) {
		case 'n':
			if (!parse_ulong(optarg, 1, 100000000ul, &iterations)) {
				fprintf(stderr, "spawn: -n wants a count >= 1, got '%s'\n", optarg);
				return 2;
			}
			break;
		case 'p':
			if (!parse_ulong(optarg, 1, MAX_WORKERS, &workers)) {
				fprintf(stderr, "spawn: -p wants 1..%d workers, got '%s'\n",
					MAX_WORKERS, optarg);
				return 2;
			}
			break;
		case 'q':
			quiet = true;
			break;
		case 'i': {
			unsigned long us;

			if (!parse_ulong(optarg, 0, 10000000ul, &us)) {
				fprintf(stderr, "spawn: -i wants 0..10000000 microseconds, got '%s'\n", optarg);
				return 2;
			}
			interval_us = us;
			break;
		}
		case 'F':
			supervisor_facts = true;
			/* fall through */
		case 'S':
			supervisor_apart = true;
			/* fall through */
		case 's':
			supervise = true;
			break;
		case 'w': {
			unsigned long us;

			if (!parse_ulong(optarg, 0, 1000000ul, &us)) {
				fprintf(stderr, "spawn: -w wants 0..1000000 microseconds, got '%s'\n", optarg);
				return 2;
			}
			supervisor_work_ns = us * 1000ull;
			break;
		}
		case 'h':
			usage(stdout, argv[0]);
			return 0;
		default:
			usage(stderr, argv[0]);
			return 2;
		}
	}
	if (optind < argc) {
		if (!supervise) {
			fprintf(stderr, "spawn: a command runs under -s or -S only\n");
			return 2;
		}
		return run_command(argv + optind);
	}
	if (supervisor_work_ns && !supervise) {
		usage(stderr, argv[0]);
		return 2;
	}
	if (access(SPAWN_PATH, X_OK)) {
		fprintf(stderr, "spawn: %s: %s\n", SPAWN_PATH, strerror(errno));
		return 1;
	}

	if (supervise && supervise_self())
		return 1;
	w = calloc(workers, sizeof(*w));
	if (!w) {
		fprintf(stderr, "spawn: out of memory\n");
		return 1;
	}
	/* The main thread joins the barrier too, so t0 is taken once all are ready. */
	err = pthread_barrier_init(&start_barrier, NULL, workers + 1);
	if (err) {
		fprintf(stderr, "spawn: pthread_barrier_init: %s\n", strerror(err));
		goto cleanup;
	}
	barrier = true;
	all = calloc(workers * iterations, sizeof(*all));
	if (!all) {
		fprintf(stderr, "spawn: out of memory\n");
		goto cleanup;
	}
	for (i = 0; i < workers; i++) {
		w[i].iterations = iterations;
		w[i].lat = all + i * iterations;
		w[i].status = -1;
		err = pthread_create(&w[i].thread, NULL, worker_run, &w[i]);
		if (err) {
			/* Those already waiting at the barrier cannot be released: give up. */
			fprintf(stderr, "spawn: pthread_create: %s\n", strerror(err));
			_exit(1);
		}
		started++;
	}
	cpu0 = cpu_used_ns();
	sup0 = sup_cpu_ns();
	pthread_barrier_wait(&start_barrier);
	t0 = now_ns();
	for (i = 0; i < started; i++)
		pthread_join(w[i].thread, NULL);
	t1 = now_ns();
	cpu1 = cpu_used_ns();
	sup1 = sup_cpu_ns();
	elapsed = t1 - t0;

	for (i = 0; i < workers; i++) {
		execs += w[i].done;
		if (w[i].err) {
			fprintf(stderr, "spawn: worker %lu, iteration %lu: %s: %s\n",
				i, w[i].done + 1, w[i].what, strerror(w[i].err));
			failed = true;
		} else if (w[i].status != -1) {
			int st = w[i].status;

			if (WIFEXITED(st))
				fprintf(stderr, "spawn: worker %lu, iteration %lu: %s exited with %d\n",
					i, w[i].done + 1, w[i].what, WEXITSTATUS(st));
			else if (WIFSIGNALED(st))
				fprintf(stderr, "spawn: worker %lu, iteration %lu: %s killed by signal %d (%s)\n",
					i, w[i].done + 1, w[i].what, WTERMSIG(st), strsignal(WTERMSIG(st)));
			else
				fprintf(stderr, "spawn: worker %lu, iteration %lu: %s: wait status 0x%x\n",
					i, w[i].done + 1, w[i].what, st);
			failed = true;
		}
	}
	if (failed) {
		fprintf(stderr, "spawn: FAILED after %lu of %lu execs\n",
			execs, iterations * workers);
		goto cleanup;
	}

	/* every worker did all its iterations: all[] is full */
	qsort(all, execs, sizeof(*all), cmp_u64);
	printf("elapsed_ns=%" PRIu64 " execs=%lu rate=%.2f pid=%d cpu_ns=%" PRIu64 " p50_ns=%" PRIu64
	       " p99_ns=%" PRIu64,
	       elapsed, execs, elapsed ? (double)execs * 1e9 / (double)elapsed : 0.0,
	       (int)getpid(), cpu1 - cpu0, all[execs / 2], all[execs * 99 / 100]);
	if (supervisor_clock_set)
		printf(" sup_cpu_ns=%" PRIu64, sup1 - sup0);
	printf("\n");
	if (!quiet)
		fprintf(stderr, "spawn: %lu workers x %lu execs of %s in %.3f s: %.1f us per exec per worker\n",
			workers, iterations, SPAWN_PATH, (double)elapsed / 1e9,
			(double)elapsed / 1e3 / (double)iterations);
	if (fflush(stdout) == EOF) {
		fprintf(stderr, "spawn: writing the result: %s\n", strerror(errno));
		goto cleanup;
	}
	ret = 0;
cleanup:
	if (supervisor_pid > 0) {
		kill(supervisor_pid, SIGKILL);
		waitpid(supervisor_pid, NULL, 0);
	}
	if (barrier)
		pthread_barrier_destroy(&start_barrier);
	free(all);
	free(w);
	return ret;
}
