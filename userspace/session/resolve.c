// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/openat2.h>
#include "util/fileid.h"
#include "session/resolve.h"
#include "util/digest.h"
#include "util/strv.h"

/*
 * The daemon's own /proc/self/fd, opened once: the file behind a
 * descriptor is read and reopened relative to it, without the lookup of
 * /proc, self and fd again on every exec of a session.
 */
static int self_fd = AT_FDCWD;	/* AT_FDCWD: not to be had; the absolute paths below then */

static void open_self_fd(void)
{
	int fd = open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0)
		self_fd = fd;
}

static int self_fd_dir(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, open_self_fd);
	return self_fd;
}

void exec_plan_init(void)
{
	self_fd_dir();
}

/* The name of fd relative to self_fd_dir(): "N", or "/proc/self/fd/N" without it. */
static const char *self_fd_name(int fd, char buf[32])
{
	char tmp[12], *t = tmp + sizeof(tmp);
	unsigned int v = fd < 0 ? 0 : (unsigned int)fd;
	size_t n = 0;

	if (self_fd_dir() == AT_FDCWD) {
		memcpy(buf, "/proc/self/fd/", 14);
		n = 14;
	}
	do {
		*--t = '0' + v % 10;
		v /= 10;
	} while (v);
	memcpy(buf + n, t, tmp + sizeof(tmp) - t);
	buf[n + (tmp + sizeof(tmp) - t)] = '\0';
	return buf;
}

static bool spacetab(char c)
{
	return c == ' ' || c == '\t';
}

static char *next_non_spacetab(char *first, const char *last)
{
	for (; first <= last; first++)
		if (!spacetab(*first))
			return first;
	return NULL;
}

static char *next_terminator(char *first, const char *last)
{
	for (; first <= last; first++)
		if (spacetab(*first) || !*first)
			return first;
	return NULL;
}

int parse_shebang(char *buf, size_t len, const char **ret_name, const char **ret_arg)
{
	char *buf_end, *i_end, *i_name, *i_sep, *i_arg = NULL;

	if (len < 2 || buf[0] != '#' || buf[1] != '!')
		return -ENOEXEC;
	/* the kernel looks at a fixed-size, zero-padded buffer */
	buf_end = buf + len - 1;
	i_end = memchr(buf, '\n', len);
	if (!i_end) {
		i_end = next_non_spacetab(buf + 2, buf_end);
		if (!i_end)
			return -ENOEXEC;
		/* no later blank or NUL: the interpreter path was cut, refuse */
		if (!next_terminator(i_end, buf_end))
			return -ENOEXEC;
		i_end = buf_end;
	}
	while (i_end > buf + 2 && spacetab(i_end[-1]))
		i_end--;
	i_name = next_non_spacetab(buf + 2, i_end);
	if (!i_name || i_name == i_end)
		return -ENOEXEC;
	i_sep = next_terminator(i_name, i_end);
	if (i_sep && *i_sep != '\0')
		i_arg = next_non_spacetab(i_sep, i_end);
	*i_end = '\0';
	if (i_sep)
		*i_sep = '\0';
	if (i_arg && i_arg >= i_end)
		i_arg = NULL;
	*ret_name = i_name;
	*ret_arg = i_arg;
	return 0;
}

void path_lookup(const char *name, const char *path_env, char *buf, size_t len)
{
	const char *dir, *colon;

	snprintf(buf, len, "%s", name);
	if (strchr(name, '/') || !*name)
		return;
	if (!path_env)
		path_env = "/usr/local/bin:/usr/bin:/bin";
	for (dir = path_env;; dir = colon + 1) {
		char cand[PATH_MAX];
		struct stat st;
		size_t dlen;
		int n;

		colon = strchr(dir, ':');
		dlen = colon ? (size_t)(colon - dir) : strlen(dir);
		/* An empty entry is the current directory, as for sh. */
		if (dlen)
			n = snprintf(cand, sizeof(cand), "%.*s/%s", (int)dlen, dir, name);
		else
			n = snprintf(cand, sizeof(cand), "./%s", name);
		if (n > 0 && (size_t)n < sizeof(cand) && !stat(cand, &st) && S_ISREG(st.st_mode) &&
		    !access(cand, X_OK)) {
			snprintf(buf, len, "%s", cand);
			return;
		}
		if (!colon)
			return;
	}
}

static char **strv_dup(const char *const *v, unsigned int n)
{
	char **out = calloc(n + 1, sizeof(*out));
	unsigned int i;

	if (!out)
		return NULL;
	for (i = 0; i < n; i++) {
		out[i] = strdup(v[i] ? v[i] : "");
		if (!out[i]) {
			while (i)
				free(out[--i]);
			free(out);
			return NULL;
		}
	}
	return out;
}

/*
 * Opens what path names for the caller, O_PATH: nothing of the file's own
 * is run by that (a FIFO's open would wait for a writer, a device's open
 * is the driver's code), so a supervised task naming a FIFO, a socket or
 * a device cannot stall the daemon, which serves every session in one
 * thread. Absolute paths start at the caller's root, relative ones at its
 * cwd (or execveat's dirfd).
 */
/*
 * "/proc/self/...", "/proc/thread-self/..." and "/dev/fd/...": the
 * caller's own process (its exe, fd N, cwd, root), through the host's
 * /proc. Resolved by us, /proc/self would be the daemon's. Returns 1 with
 * the host path in buf, 0 for any other path, or -EXDEV for a ".." after
 * the prefix (it would leave the task's own directory for one that
 * names another process in another pid namespace): not judged, it fails.
 */
static int own_proc_path(const struct eg_exec_spec *s, const char *path, char *buf, size_t len)
{
	const char *rest;
	int n;

	if (s->tgid <= 0)
		return 0;
	if (!strncmp(path, "/dev/fd/", 8)) {
		/* /dev/fd is /proc/self/fd: what follows is looked up there, as the kernel will */
		rest = path + 7;
		n = snprintf(buf, len, "/proc/%d/fd%s", (int)s->tgid, rest);
	} else if (!strncmp(path, "/proc/self", 10) && (path[10] == '/' || !path[10])) {
		rest = path + 10;
		n = snprintf(buf, len, "/proc/%d%s", (int)s->tgid, rest);
	} else if (!strncmp(path, "/proc/thread-self", 17) && (path[17] == '/' || !path[17])) {
		/* what the kernel's thread-self names: the thread's own files table, cwd, ... */
		rest = path + 17;
		n = snprintf(buf, len, "/proc/%d/task/%d%s", (int)s->tgid, (int)s->tid, rest);
	} else {
		return 0;
	}
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	for (const char *c = rest; (c = strstr(c, "..")); c += 2)
		if (c[-1] == '/' && (c[2] == '/' || !c[2]))
			return -EXDEV;
	return 1;
}

static int open_target(const struct eg_exec_spec *s, const char *path, bool first, int *ret_fd)
{
	int flags = O_PATH | O_CLOEXEC, fd, base, rc;
	char own[PATH_MAX];

	if (first && s->execveat && (s->at_flags & AT_EMPTY_PATH) && !*path) {
		if (s->dir_fd < 0)
			return -EBADF;
		/* the fd itself is the program (opened O_PATH by the caller of exec_plan) */
		fd = fcntl(s->dir_fd, F_DUPFD_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		*ret_fd = fd;
		return 0;
	}
	if (!*path)
		return -ENOENT;
	/* O_PATH|O_NOFOLLOW opens a final symlink itself: describe() answers ELOOP for it */
	if (first && s->execveat && (s->at_flags & AT_SYMLINK_NOFOLLOW))
		flags |= O_NOFOLLOW;
	rc = own_proc_path(s, path, own, sizeof(own));
	if (rc < 0)
		return rc;
	if (rc) {
		fd = open(own, flags);
		if (fd < 0)
			return -errno;
		*ret_fd = fd;
		return 0;
	}
	if (path[0] == '/') {
		if (s->root_fd >= 0) {
			/*
			 * The caller's root, in the caller's mount namespace:
			 * /proc/PID/root crosses the caller's mounts, and
			 * RESOLVE_IN_ROOT keeps '..' and absolute symlinks
			 * inside it, as the kernel will for the exec.
			 */
			struct open_how how = { .flags = flags, .resolve = RESOLVE_IN_ROOT };

			fd = syscall(SYS_openat2, s->root_fd, path, &how, sizeof(how));
			if (fd < 0)
				return -errno;
			*ret_fd = fd;
			return 0;
		}
		base = AT_FDCWD;
	} else if (first && s->execveat && s->dir_fd >= 0) {
		base = s->dir_fd;
	} else if (s->cwd_fd >= 0) {
		base = s->cwd_fd;
	} else if (s->open_cwd) {
		base = s->open_cwd(s->open_cwd_arg);
		if (base < 0)
			return base;
	} else {
		base = AT_FDCWD;
	}
	{
		/*
		 * No magic link on the way: from the cwd, "self/exe" or
		 * "self/fd/3" under /proc would be the daemon's, not the
		 * task's. Such an exec is not judged; it fails.
		 */
		struct open_how how = { .flags = flags, .resolve = RESOLVE_NO_MAGICLINKS };

		fd = syscall(SYS_openat2, base, path, &how, sizeof(how));
		if (fd < 0 && errno == ENOSYS)
			fd = openat(base, path, flags);
		if (fd < 0 && errno == ELOOP) {
			/* a magic link (-EXDEV: not judged here), or a loop the kernel meets too */
			fd = openat(base, path, flags);
			if (fd >= 0) {
				close(fd);
				return -EXDEV;
			}
		}
	}
	if (fd < 0)
		return -errno;
	*ret_fd = fd;
	return 0;
}

/*
 * What describe() read of a file, by identity: most execs are of a few
 * programs, and the reopen for reading costs more than the rest of the
 * resolution. An entry holds while the file's size, mtime and ctime do.
 * A write that leaves them equal (within the clock's grain, through a
 * shared mapping) is the same race as one between our read and the
 * kernel's, which the kernel's ticket check settles: what runs must be
 * the file, script and committed argv allowed, or it does not run.
 */
#define HEADS		64	/* direct-mapped */

struct head {
	struct stat st;
	enum eg_prog_kind kind;
	size_t len;
	bool valid;
	char buf[EG_BINPRM_BUF];
};
/* one per thread: the supervisor's lookups run in worker threads (offload.c) */
static __thread struct head heads[HEADS];

static struct head *head_slot(const struct stat *st)
{
	uint64_t h = ((uint64_t)st->st_ino ^ ((uint64_t)st->st_dev << 32)) * 0x9e3779b97f4a7c15ull;

	return &heads[h >> 58];
}

static bool head_same(const struct head *c, const struct stat *st)
{
	return c->valid && eg_stat_same(&c->st, st);
}

/*
 * Identity and head of the file behind an O_PATH fd. Only a regular file
 * is opened for reading, and the same file (the fd's magic link, not the
 * path again), non-blocking: execve of anything else fails with EACCES in
 * the kernel (may_open), and so it does here, before any open of it.
 */
/* The content of a file of a size the spec asks for, hashed: read by the daemon, not the task. */
static void hash_if_wanted(const struct eg_exec_spec *s, int fd, struct eg_program *p)
{
	char proc[64];
	unsigned int i;
	int rfd;

	for (i = 0; i < s->n_content_sizes && s->content_sizes[i] != p->size; i++)
		;
	if (i == s->n_content_sizes || !p->size || p->size > EG_CONTENT_MAX)
		return;
	rfd = openat(self_fd_dir(), self_fd_name(fd, proc), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (rfd < 0)
		return;
	p->hashed = !eg_hash_fd(rfd, p->size, p->sha256);
	close(rfd);
}

static int describe(const struct eg_exec_spec *s, int fd, struct eg_program *p, char *head, size_t *ret_len)
{
	struct head *c;
	char proc[64];
	struct stat st;
	ssize_t n;
	int rfd;

	if (fstat(fd, &st))
		return -errno;
	if (S_ISLNK(st.st_mode))
		return -ELOOP;		/* execveat(AT_SYMLINK_NOFOLLOW) of a symlink */
	if (!S_ISREG(st.st_mode))
		return -EACCES;		/* a directory, FIFO, socket or device */
	p->dev = eg_kdev(st.st_dev);
	p->ino = st.st_ino;
	p->mode = st.st_mode;
	p->uid = st.st_uid;
	p->gid = st.st_gid;
	p->size = st.st_size;
	hash_if_wanted(s, fd, p);
	n = readlinkat(self_fd_dir(), self_fd_name(fd, proc), p->path, sizeof(p->path) - 1);
	if (n < 0)
		return -errno;
	p->path[n] = '\0';
	c = head_slot(&st);
	if (head_same(c, &st)) {
		memcpy(head, c->buf, c->len);
		*ret_len = c->len;
		p->kind = c->kind;
		return 0;
	}
	rfd = openat(self_fd_dir(), proc, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (rfd < 0)
		return -errno;
	n = pread(rfd, head, EG_BINPRM_BUF, 0);
	if (n < 0)
		n = -errno;
	close(rfd);
	if (n < 0)
		return n;
	*ret_len = n;
	if (n >= 4 && !memcmp(head, "\177ELF", 4))
		p->kind = EG_PROG_ELF;
	else if (n >= 2 && head[0] == '#' && head[1] == '!')
		p->kind = EG_PROG_SCRIPT;
	else
		p->kind = EG_PROG_UNKNOWN;
	c->st = st;
	c->kind = p->kind;
	c->len = n;
	memcpy(c->buf, head, n);
	c->valid = true;
	return 0;
}

/*
 * A dynamic loader run as the command maps the program it is asked for,
 * opened as a path from the working directory; a bare name it looks up in
 * library paths (LD_LIBRARY_PATH, --library-path, its cache), which this
 * side does not follow: such a program cannot be pinned.
 */
static void plan_loader(const struct eg_exec_spec *s, struct eg_exec_plan *plan)
{
	struct eg_program *f = &plan->prog[plan->n - 1], *t = &plan->target;
	char head[EG_BINPRM_BUF + 1];
	unsigned int at;
	size_t len = 0;
	int fd = -1, rc;

	if (!s->loaders || f->kind != EG_PROG_ELF || !loaders_has(s->loaders, f->dev, f->ino))
		return;
	at = ldso_target((const char *const *)f->argv, f->argc);
	if (!at)
		return;		/* --help, --version, no program: the loader runs alone */
	plan->loader = EG_LOADER_UNPINNED;
	if (at >= f->argc || !strchr(f->argv[at], '/'))
		return;
	memset(t, 0, offsetof(struct eg_program, argv));
	eg_copy_str(t->requested, sizeof(t->requested), f->argv[at]);
	t->argv = f->argv + at;
	t->argc = f->argc - at;
	rc = open_target(s, f->argv[at], false, &fd);
	if (!rc) {
		rc = describe(s, fd, t, head, &len);
		close(fd);
	}
	/* a program that is not there (or no ELF): the loader says so and runs nothing */
	plan->loader = rc ? EG_LOADER_UNPINNED : EG_LOADER_TARGET;
}

/* argv for the first program, the caller's own copy (spec->load_argv: read now) */
static int plan_argv(const struct eg_exec_spec *s, char ***ret_argv, unsigned int *ret_argc)
{
	static const char *const empty[] = { "" };
	const char *const *argv = s->argv;
	unsigned int argc = s->argc;
	int rc;

	if (s->load_argv) {
		rc = s->load_argv(s->load_argv_arg, &argv, &argc);
		if (rc)
			return rc;
	}
	/* since 5.18 the kernel never runs a program with argc 0: it adds "" */
	if (argc == 0) {
		argv = empty;
		argc = 1;
	}
	*ret_argv = strv_dup(argv, argc);
	*ret_argc = argc;
	return *ret_argv ? 0 : -ENOMEM;
}

int exec_plan(const struct eg_exec_spec *s, struct eg_exec_plan *plan)
{
	const char *next_path = s->path;
	char **argv = NULL;
	unsigned int argc = 0, k;
	int rc = 0;

	/* not a memset: the plan is about 50 KiB, of which an exec uses a few hundred bytes */
	plan->n = 0;
	plan->err = 0;
	plan->loader = EG_LOADER_NONE;
	/* the kernel's name for the file: what a script's interpreter receives */
	if (!s->execveat || s->dir_fd_num == AT_FDCWD || s->path[0] == '/')
		eg_copy_str(plan->bprm_filename, sizeof(plan->bprm_filename), s->path);
	else if (!*s->path)
		snprintf(plan->bprm_filename, sizeof(plan->bprm_filename), "/dev/fd/%d", s->dir_fd_num);
	else
		snprintf(plan->bprm_filename, sizeof(plan->bprm_filename), "/dev/fd/%d/%s",
			 s->dir_fd_num, s->path);
	for (k = 0; k < EG_MAX_PROGRAMS; k++) {
		struct eg_program *p = &plan->prog[k];
		char head[EG_BINPRM_BUF + 1] = {};
		const char *i_name, *i_arg;
		char **nargv;
		size_t len = 0;
		unsigned int nargc, j, o;
		int fd = -1;

		p->path[0] = '\0';
		p->dev = p->ino = 0;
		p->mode = p->uid = p->gid = 0;
		p->size = 0;
		p->hashed = false;
		p->kind = EG_PROG_UNKNOWN;
		eg_copy_str(p->requested, sizeof(p->requested), next_path);
		p->argv = argv;
		p->argc = argc;
		plan->n = k + 1;
		rc = open_target(s, next_path, k == 0, &fd);
		if (!rc) {
			rc = describe(s, fd, p, head, &len);
			close(fd);
		}
		/* the program is there: now its argv (not before: most failed lookups never need it) */
		if (!rc && k == 0) {
			rc = plan_argv(s, &argv, &argc);
			p->argv = argv;
			p->argc = argc;
		}
		if (rc)
			break;
		if (p->kind != EG_PROG_SCRIPT)
			break;
		/* the kernel parses a zero-padded BINPRM_BUF_SIZE buffer */
		rc = parse_shebang(head, EG_BINPRM_BUF, &i_name, &i_arg);
		if (rc)
			break;
		/* a script named through an fd the exec closes: its interpreter could not open it */
		if (k == 0 && s->execveat && s->path[0] != '/' && s->dir_fd_cloexec) {
			rc = -ENOENT;
			break;
		}
		/* argv for the interpreter: name, [arg], the script's name, argv[1..] */
		nargc = 1 + (i_arg ? 1 : 0) + 1 + (argc - 1);
		nargv = calloc(nargc + 1, sizeof(*nargv));
		if (!nargv) {
			rc = -ENOMEM;
			break;
		}
		o = 0;
		nargv[o++] = strdup(i_name);
		if (i_arg)
			nargv[o++] = strdup(i_arg);
		nargv[o++] = strdup(k == 0 ? plan->bprm_filename : p->requested);
		for (j = 1; j < argc; j++)
			nargv[o++] = strdup(argv[j]);
		for (j = 0; j < nargc; j++)
			if (!nargv[j])
				rc = -ENOMEM;
		if (rc) {
			for (j = 0; j < nargc; j++)
				free(nargv[j]);
			free(nargv);
			break;
		}
		argv = nargv;
		argc = nargc;
		next_path = argv[0];
		if (k + 1 == EG_MAX_PROGRAMS) {
			/* one interpreter too many: the kernel says ELOOP */
			rc = -ELOOP;
			for (j = 0; j < nargc; j++)
				free(nargv[j]);
			free(nargv);
			break;
		}
	}
	if (!rc)
		plan_loader(s, plan);
	plan->err = rc;
	return rc;
}

const struct eg_program *exec_plan_final(const struct eg_exec_plan *plan)
{
	return plan->n ? &plan->prog[plan->n - 1] : NULL;
}

void exec_plan_free(struct eg_exec_plan *plan)
{
	unsigned int k, j;

	for (k = 0; k < plan->n; k++) {
		/* a program shares its argv with no other */
		if (!plan->prog[k].argv)
			continue;
		for (j = 0; j < plan->prog[k].argc; j++)
			free(plan->prog[k].argv[j]);
		free(plan->prog[k].argv);
		plan->prog[k].argv = NULL;
	}
	plan->n = 0;
}
