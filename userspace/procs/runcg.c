// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* A cgroup per run (procs/runcg.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "procs/runcg.h"

#define RUNS_DIR	"execgate-runs"
#define DAEMON_LEAF	"execgate-daemon"

struct eg_runcg {
	char mnt[PATH_MAX];		/* the v2 mount */
	char runs[PATH_MAX];		/* BASE/execgate-runs, absolute; "" when runs get no v2 cgroup */
	bool v2_pids;			/* the pids controller is on below runs */
	char v1_runs[PATH_MAX];		/* the v1 pids hierarchy's execgate-runs, or "" */
	char why[256];			/* what runs go without, and why */
	char stamp[48];			/* names stay unique past a restart, and between daemons */
};

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, strlen(s)) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

static int read_str(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

/* Whether word is one of the space-separated words of the file at path. */
static bool has_word(const char *path, const char *word)
{
	char buf[512], *tok, *save;

	if (read_str(path, buf, sizeof(buf)))
		return false;
	for (tok = strtok_r(buf, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save))
		if (!strcmp(tok, word))
			return true;
	return false;
}

/* Our cgroup in hierarchy "0::" (v2) or ":pids:" (v1), from /proc/self/cgroup. */
static int own_cgroup(const char *tag, char *buf, size_t len)
{
	char line[PATH_MAX + 64];
	FILE *f = fopen("/proc/self/cgroup", "re");
	int rc = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, tag);

		if (!p || (tag[0] == '0' && p != line))
			continue;
		p += strlen(tag);
		p[strcspn(p, "\n")] = '\0';
		rc = (size_t)snprintf(buf, len, "%s", p) >= len ? -ENAMETOOLONG : 0;
		break;
	}
	fclose(f);
	return rc;
}

/*
 * Where a cgroup hierarchy is mounted (/proc/self/mountinfo): the v2 one
 * (fstype "cgroup2"), or the v1 one with the controller opt among its
 * super options ("cgroup", opt "pids"). -ENOENT when there is none.
 */
static int cgroup_mount(const char *fstype_want, const char *opt, char *buf, size_t len)
{
	char line[4096], mnt[PATH_MAX], fstype[64], opts[1024];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int rc = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - ");

		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS ... - FSTYPE SOURCE SUPER_OPTS */
		if (!sep || sscanf(sep + 3, "%63s %*s %1023s", fstype, opts) < 1 || strcmp(fstype, fstype_want))
			continue;
		if (opt) {
			char *o, *save;
			bool found = false;

			for (o = strtok_r(opts, ",", &save); o && !found; o = strtok_r(NULL, ",", &save))
				found = !strcmp(o, opt);
			if (!found)
				continue;
		}
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1)
			continue;
		rc = (size_t)snprintf(buf, len, "%s", mnt) >= len ? -ENAMETOOLONG : 0;
		break;
	}
	fclose(f);
	return rc;
}

/*
 * Under systemd's Delegate=yes the daemon is alone in its unit's cgroup,
 * where a controller cannot be given to children while a process is in
 * it (cgroup v2's "no internal processes"): it moves to a leaf of its
 * own first, as systemd asks of delegated services. Elsewhere (a shell's
 * scope, the root) nothing moves.
 */
static void delegate_pids(const char *base)
{
	char path[PATH_MAX * 2 + 64], buf[64], pid[16];

	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", base);
	if (has_word(path, "pids"))
		return;
	snprintf(path, sizeof(path), "%s/cgroup.controllers", base);
	if (!has_word(path, "pids"))
		return;
	snprintf(path, sizeof(path), "%s/cgroup.procs", base);
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (read_str(path, buf, sizeof(buf)) || strcmp(buf, pid))
		return;		/* not alone there: not ours to rearrange */
	snprintf(path, sizeof(path), "%s/" DAEMON_LEAF, base);
	if (mkdir(path, 0755) && errno != EEXIST)
		return;
	snprintf(path, sizeof(path), "%s/" DAEMON_LEAF "/cgroup.procs", base);
	if (write_str(path, "0"))
		return;
	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", base);
	write_str(path, "+pids");
}

#define SIGNAL_DEPTH	16	/* cgroups below a run's that are looked into */

/* The empty cgroups below dir, deepest first (a run as root may have made some). */
static void remove_below(char *dir, size_t len, int depth)
{
	size_t n = strlen(dir);
	struct dirent *de;
	DIR *d;

	if (depth >= SIGNAL_DEPTH || !(d = opendir(dir)))
		return;
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.' || n + 1 + strlen(de->d_name) >= len)
			continue;
		dir[n] = '/';
		strcpy(dir + n + 1, de->d_name);
		remove_below(dir, len, depth + 1);
		rmdir(dir);
		dir[n] = '\0';
	}
	closedir(d);
}

/*
 * Whether the daemon that made a run's cgroup named "p-N.PID.STAMP" is
 * gone: no process PID, or one that is not an execgate (its number taken
 * since). Not by times: the wall clock steps (NTP at boot), and a
 * handover is the same process. A name of another form is not ours to
 * judge.
 */
static bool maker_gone(const char *name)
{
	unsigned long long stamp;
	char path[64], comm[32];
	unsigned int seq;
	int pid, n = 0;

	if (sscanf(name, "p-%u.%d.%llx%n", &seq, &pid, &stamp, &n) != 3 || name[n] || pid <= 0)
		return false;
	if (pid == getpid())
		return false;
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	n = read_str(path, comm, sizeof(comm));
	if (n)
		return n == -ENOENT || n == -ESRCH;
	comm[strcspn(comm, "\n")] = '\0';
	return strcmp(comm, "execgate");
}

/*
 * The cgroups of runs whose daemon is gone (killed, or stopped while they
 * still ran: the stop could not remove them), once they are empty. The
 * kernel refuses to remove one that still has a process.
 */
static void sweep(const char *runs)
{
	char path[PATH_MAX + 128];
	struct dirent *de;
	DIR *d = opendir(runs);

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || strncmp(de->d_name, "p-", 2) || !maker_gone(de->d_name) ||
		    (size_t)snprintf(path, sizeof(path), "%s/%s", runs, de->d_name) >= sizeof(path))
			continue;
		remove_below(path, sizeof(path), 0);
		rmdir(path);
	}
	closedir(d);
}

int runcg_open(struct eg_runcg **ret)
{
	struct eg_runcg *cg = calloc(1, sizeof(*cg));
	char own[PATH_MAX], base[PATH_MAX * 2], path[PATH_MAX * 2 + 64];
	size_t n;
	int rc;

	if (!cg)
		return -ENOMEM;
	*ret = cg;
	snprintf(cg->stamp, sizeof(cg->stamp), "%d.%llx", (int)getpid(), (unsigned long long)time(NULL));
	rc = cgroup_mount("cgroup2", NULL, cg->mnt, sizeof(cg->mnt));
	if (!rc)
		rc = own_cgroup("0::", own, sizeof(own));
	if (rc) {
		snprintf(cg->why, sizeof(cg->why), "no cgroup v2 for the daemon (%s): runs end by their "
			 "process group only", strerror(-rc));
		return 0;
	}
	/* a handover, or a restart in the leaf it moved to: the runs go beside it */
	n = strlen(own);
	if (n >= sizeof(DAEMON_LEAF) && !strcmp(own + n - strlen(DAEMON_LEAF), DAEMON_LEAF) &&
	    own[n - strlen(DAEMON_LEAF) - 1] == '/')
		own[n - strlen(DAEMON_LEAF) - 1] = '\0';
	snprintf(base, sizeof(base), "%s%s", cg->mnt, strcmp(own, "/") ? own : "");
	if (strcmp(own, "/") && strcmp(own, ""))
		delegate_pids(base);
	snprintf(path, sizeof(path), "%s/" RUNS_DIR, base);
	if (mkdir(path, 0755) && errno != EEXIST) {
		snprintf(cg->why, sizeof(cg->why), "cannot make %.150s: %s: runs end by their process group only",
			 path, strerror(errno));
		return 0;
	}
	if ((size_t)snprintf(cg->runs, sizeof(cg->runs), "%.4000s", path) >= sizeof(cg->runs) - 100) {
		cg->runs[0] = '\0';
		snprintf(cg->why, sizeof(cg->why), "the daemon's cgroup path is too long: runs end by their "
			 "process group only");
		return 0;
	}
	snprintf(path, sizeof(path), "%s/cgroup.controllers", cg->runs);
	if (has_word(path, "pids")) {
		snprintf(path, sizeof(path), "%s/cgroup.subtree_control", cg->runs);
		cg->v2_pids = has_word(path, "pids") || !write_str(path, "+pids");
	}
	sweep(cg->runs);
	if (!cg->v2_pids) {
		/* a hybrid host: the pids controller on a v1 hierarchy of its own */
		char mnt[PATH_MAX];

		if (!cgroup_mount("cgroup", "pids", mnt, sizeof(mnt)) && !own_cgroup(":pids:", own, sizeof(own))) {
			snprintf(path, sizeof(path), "%s%s/" RUNS_DIR, mnt, strcmp(own, "/") ? own : "");
			if ((!mkdir(path, 0755) || errno == EEXIST) && strlen(path) < sizeof(cg->v1_runs) - 100) {
				snprintf(cg->v1_runs, sizeof(cg->v1_runs), "%.4000s", path);
				sweep(cg->v1_runs);
			}
		}
		if (!cg->v1_runs[0])
			snprintf(cg->why, sizeof(cg->why), "no pids controller for runs: RLIMIT_NPROC alone bounds them");
	}
	return 0;
}

void runcg_free(struct eg_runcg *cg)
{
	free(cg);
}

bool runcg_available(const struct eg_runcg *cg)
{
	return cg && cg->runs[0];
}

void runcg_status(const struct eg_runcg *cg, struct jsonw *w)
{
	jsonw_start_object(w);
	jsonw_string_field(w, "cgroup", cg && cg->runs[0] ? cg->runs : NULL);
	jsonw_string_field(w, "pids_max", !cg ? NULL : cg->v2_pids ? "v2" : cg->v1_runs[0] ? "v1" : NULL);
	jsonw_string_field(w, "why", cg && cg->why[0] ? cg->why : NULL);
	jsonw_end_object(w);
}

static int make_one(const char *runs, const char *name, uint64_t pids_max, bool pids, char *ret_path,
		    int *ret_fd, char *err, size_t errlen)
{
	char path[PATH_MAX + 64], num[32];
	int rc;

	if ((size_t)snprintf(ret_path, PATH_MAX, "%s/%s", runs, name) >= PATH_MAX)
		return -ENAMETOOLONG;
	if (mkdir(ret_path, 0755) && errno != EEXIST) {
		rc = -errno;
		snprintf(err, errlen, "cannot make the run's cgroup %s: %s", ret_path, strerror(-rc));
		ret_path[0] = '\0';
		return rc;
	}
	if (pids && pids_max) {
		snprintf(path, sizeof(path), "%s/pids.max", ret_path);
		snprintf(num, sizeof(num), "%llu", (unsigned long long)pids_max);
		rc = write_str(path, num);
		if (rc) {
			snprintf(err, errlen, "cannot set %s: %s", path, strerror(-rc));
			return rc;
		}
	}
	snprintf(path, sizeof(path), "%s/cgroup.procs", ret_path);
	*ret_fd = open(path, O_WRONLY | O_CLOEXEC);
	if (*ret_fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(-rc));
		return rc;
	}
	return 0;
}

int runcg_make(struct eg_runcg *cg, const char *id, uint64_t pids_max, struct eg_run_cg *ret, char *err,
	       size_t errlen)
{
	char name[96];
	int rc;

	memset(ret, 0, sizeof(*ret));
	ret->procs_fd = ret->v1_procs_fd = -1;
	if (!runcg_available(cg))
		return 0;
	snprintf(name, sizeof(name), "%.32s.%s", id, cg->stamp);
	rc = make_one(cg->runs, name, pids_max, cg->v2_pids, ret->v2, &ret->procs_fd, err, errlen);
	ret->v2_root = strlen(cg->mnt);
	if (!rc && cg->v1_runs[0])
		rc = make_one(cg->v1_runs, name, pids_max, true, ret->v1_pids, &ret->v1_procs_fd, err, errlen);
	if (rc) {
		runcg_close_fds(ret);
		runcg_remove(ret);
	}
	return rc;
}

int runcg_join(const struct eg_run_cg *rc)
{
	/* "0": the writer itself */
	if (rc->procs_fd >= 0 && write(rc->procs_fd, "0", 1) != 1)
		return -errno;
	if (rc->v1_procs_fd >= 0 && write(rc->v1_procs_fd, "0", 1) != 1)
		return -errno;
	return 0;
}

void runcg_close_fds(struct eg_run_cg *rc)
{
	if (rc->procs_fd >= 0)
		close(rc->procs_fd);
	if (rc->v1_procs_fd >= 0)
		close(rc->v1_procs_fd);
	rc->procs_fd = rc->v1_procs_fd = -1;
}

int runcg_populated(const struct eg_run_cg *rc)
{
	char path[PATH_MAX + 32], buf[256], *p;
	int e;

	if (!rc->v2[0])
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/cgroup.events", rc->v2);
	e = read_str(path, buf, sizeof(buf));
	if (e)
		return e;
	p = strstr(buf, "populated ");
	return p ? p[10] == '1' : -EIO;
}

/* Whether pid is in the cgroup at rel (its path from the hierarchy's root). */
static bool member(const char *rel, pid_t pid)
{
	char path[64], want[PATH_MAX + 8], line[PATH_MAX + 64];
	bool in = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	snprintf(want, sizeof(want), "0::%s\n", rel);
	while (!in && fgets(line, sizeof(line), f))
		in = !strcmp(line, want);
	fclose(f);
	return in;
}

/*
 * sig to each process of the cgroup at dir and of those below it (a run as
 * root may make some and move into them): each pid is pinned by a pidfd
 * and then checked to be in the cgroup (a pid reused between the two has
 * no process behind the pidfd any more), so no other process is
 * signalled. 0 if one got it.
 */
static int signal_tree(char *dir, size_t len, size_t root, int sig, int depth)
{
	size_t n = strlen(dir);
	char *line = NULL;
	size_t cap = 0;
	int rc = -ESRCH;
	struct dirent *de;
	FILE *f;
	DIR *d;

	if (n + sizeof("/cgroup.procs") > len)
		return rc;
	strcpy(dir + n, "/cgroup.procs");
	f = fopen(dir, "re");
	dir[n] = '\0';
	while (f && getline(&line, &cap, f) > 0) {
		pid_t pid = (pid_t)atoi(line);
		int fd = pid > 0 ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;

		if (fd < 0)
			continue;
		if (member(dir + root, pid) && !syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0))
			rc = 0;
		close(fd);
	}
	free(line);
	if (f)
		fclose(f);
	if (depth >= SIGNAL_DEPTH || !(d = opendir(dir)))
		return rc;
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.' || n + 1 + strlen(de->d_name) >= len)
			continue;
		dir[n] = '/';
		strcpy(dir + n + 1, de->d_name);
		if (!signal_tree(dir, len, root, sig, depth + 1))
			rc = 0;
		dir[n] = '\0';
	}
	closedir(d);
	return rc;
}

int runcg_signal(const struct eg_run_cg *rc, int sig)
{
	char path[PATH_MAX + 32];
	int rounds, rc_ = -ESRCH;

	if (!rc->v2[0])
		return -ENOENT;
	if (sig == SIGKILL) {
		snprintf(path, sizeof(path), "%s/cgroup.kill", rc->v2);
		if (!write_str(path, "1"))
			return runcg_populated(rc) == 0 ? -ESRCH : 0;
	}
	/* a few rounds of SIGKILL, for what forked meanwhile */
	for (rounds = 0; rounds < (sig == SIGKILL ? 8 : 1); rounds++) {
		snprintf(path, sizeof(path), "%s", rc->v2);
		if (!signal_tree(path, sizeof(path), rc->v2_root, sig, 0))
			rc_ = 0;
	}
	return rc_;
}

void runcg_remove(struct eg_run_cg *rc)
{
	char path[PATH_MAX + 32];

	if (rc->v2[0]) {
		snprintf(path, sizeof(path), "%s", rc->v2);
		remove_below(path, sizeof(path), 0);
	}
	if (rc->v2[0] && (!rmdir(rc->v2) || errno == ENOENT))
		rc->v2[0] = '\0';
	if (rc->v1_pids[0] && (!rmdir(rc->v1_pids) || errno == ENOENT))
		rc->v1_pids[0] = '\0';
}
