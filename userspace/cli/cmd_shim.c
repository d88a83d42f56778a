// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * execgate shim install|uninstall: put the shell shim (shim/shim.c) in place
 * of /bin/sh and /bin/bash, the real shells moved beside it as sh.real and
 * bash.real, and take it away again.
 *
 * Every step leaves a working system and a re-run finishes the job:
 *   install:   shim copied to NAME.execgate-new (fsync'd)
 *              link(NAME, NAME.real)       the shell, or the symlink itself
 *              rename(NAME.execgate-new, NAME)   atomic: NAME always runs
 *   uninstall: rename(NAME.real, NAME)     atomic, the original back as it was
 * A NAME.real that is the same inode as NAME is an install stopped between
 * its two steps; uninstall just drops the extra link.
 */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli/commands.h"
#include "cli/common.h"
#include "shim/shimlib.h"
#include "util/log.h"
#include "util/paths.h"

#define TMP_SUFFIX ".execgate-new"

static const char *const shells[] = { "sh", "bash" };

struct shim_args {
	struct cli_common common;
	const char *action;
	const char *root;
	const char *execgate;
	const char *shim;
	bool fail_open;
};

enum { OPT_ROOT = 0x100, OPT_FAIL_OPEN, OPT_EXECGATE, OPT_SHIM };

static const struct argp_option options[] = {
	{ "root", OPT_ROOT, "DIR", 0, "Work on the system under DIR (an image, a chroot) instead of /", 0 },
	{ "fail-open", OPT_FAIL_OPEN, NULL, 0, "install: with no daemon to ask, run the real shell unsupervised (warned) instead of refusing", 0 },
	{ "execgate", OPT_EXECGATE, "PATH", 0, "install: the execgate binary the shim runs, as seen from inside --root (default: this one)", 0 },
	{ "shim", OPT_SHIM, "PATH", 0, "install: the shim binary to install (default: execgate-shim next to this binary)", 0 },
	{},
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct shim_args *a = state->input;

	switch (key) {
	case ARGP_KEY_INIT:
		CLI_COMMON_INIT(state, &a->common);
		break;
	case OPT_ROOT:
		a->root = arg;
		break;
	case OPT_FAIL_OPEN:
		a->fail_open = true;
		break;
	case OPT_EXECGATE:
		if (arg[0] != '/')
			argp_error(state, "--execgate takes an absolute path");
		a->execgate = arg;
		break;
	case OPT_SHIM:
		a->shim = arg;
		break;
	case ARGP_KEY_ARG:
		if (a->action)
			argp_error(state, "unexpected argument '%s'", arg);
		if (strcmp(arg, "install") && strcmp(arg, "uninstall"))
			argp_error(state, "'%s': the action is install or uninstall", arg);
		a->action = arg;
		break;
	case ARGP_KEY_END:
		if (!a->action)
			argp_error(state, "install or uninstall?");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* ROOT/bin, following a /bin -> usr/bin link inside ROOT (merged /usr). */
static int bin_dir(const char *root, char *out, size_t len)
{
	char link[PATH_MAX], p[PATH_MAX];
	ssize_t n;

	snprintf(p, sizeof(p), "%s/bin", root);
	n = readlink(p, link, sizeof(link) - 1);
	if (n > 0) {
		link[n] = 0;
		if (strstr(link, ".."))
			return -ELOOP;
		if ((size_t)snprintf(out, len, link[0] == '/' ? "%s%s" : "%s/%s", root, link) >= len)
			return -ENAMETOOLONG;
	} else {
		snprintf(out, len, "%s", p);
	}
	return access(out, F_OK) ? -errno : 0;
}

/*
 * Is path, with every link on the way followed, still inside root? An image
 * whose usr, usr/bin or etc is a link to an absolute path must not make us
 * move the host's shells or write the host's /etc. 0, -EXDEV outside, or
 * -errno; a path that does not exist yet is judged by its parent.
 */
static int inside_root(const char *root, const char *path)
{
	char r[PATH_MAX], q[PATH_MAX], parent[PATH_MAX];
	size_t n;

	if (!root[0])
		return 0;
	if (!realpath(root, r))
		return -errno;
	if (!realpath(path, q)) {
		char *slash;

		if (errno != ENOENT)
			return -errno;
		snprintf(parent, sizeof(parent), "%s", path);
		slash = strrchr(parent, '/');
		if (!slash || slash == parent)
			return -ENOENT;
		*slash = 0;
		return inside_root(root, parent);
	}
	n = strlen(r);
	if (!strcmp(r, "/") || (!strncmp(q, r, n) && (q[n] == '/' || !q[n])))
		return 0;
	return -EXDEV;
}

/* 1: path is a shim, 0: something else, -errno. */
static int is_shim(const char *path)
{
	static const char m[] = SHIM_MARKER;
	struct stat st;
	char *buf;
	ssize_t n;
	int fd, rc;

	if (lstat(path, &st))
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_size > (16 << 20))
		return 0;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(st.st_size + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	n = pread(fd, buf, st.st_size, 0);
	close(fd);
	rc = n > 0 && memmem(buf, n, m, sizeof(m) - 1) ? 1 : 0;
	free(buf);
	return rc;
}

static bool lexists(const char *path)
{
	struct stat st;

	return !lstat(path, &st);
}

static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return !lstat(a, &sa) && !lstat(b, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	ssize_t n;
	int in, out, rc = 0;

	in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	unlink(to);
	out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0755);
	if (out < 0) {
		rc = -errno;
		close(in);
		return rc;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n) {
			rc = -EIO;
			break;
		}
	if (n < 0)
		rc = -errno;
	if (!rc && (fchmod(out, 0755) || fsync(out)))
		rc = -errno;
	close(in);
	if (close(out) && !rc)
		rc = -errno;
	if (rc)
		unlink(to);
	return rc;
}

static int write_conf(const char *root, const struct shim_args *a, const struct eg_paths *p,
		      const char *execgate)
{
	char dir[PATH_MAX], path[PATH_MAX], tmp[PATH_MAX + 16], buf[SHIM_CONF_MAX], err[128];
	struct shim_conf check;
	int fd, n;

	snprintf(dir, sizeof(dir), "%s/etc/execgate", root);
	snprintf(path, sizeof(path), "%s%s", root, SHIM_CONF_PATH);
	snprintf(tmp, sizeof(tmp), "%s" TMP_SUFFIX, path);
	n = snprintf(buf, sizeof(buf),
		     "# written by 'execgate shim install'; read by the shell shim at every start\n"
		     "execgate=%s\npin_path=%s\nsocket=%s\nfail_open=%d\n",
		     execgate, p->pin, p->sock, a->fail_open);
	if (n >= (int)sizeof(buf) || shim_conf_parse(buf, n, &check, err, sizeof(err))) {
		p_err("the shim's configuration would not load: %s", err);
		return -EINVAL;
	}
	*strrchr(dir, '/') = 0;			/* ROOT/etc */
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	strcat(dir, "/execgate");
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (write(fd, buf, n) != n || fsync(fd)) {
		close(fd);
		unlink(tmp);
		return -EIO;
	}
	close(fd);
	return rename(tmp, path) ? -errno : 0;
}

static int install_one(const char *bin, const char *name, const char *shim)
{
	char path[PATH_MAX], real[PATH_MAX + 8], tmp[PATH_MAX + 16];
	int rc;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", bin, name) >= sizeof(path))
		return -ENAMETOOLONG;
	snprintf(real, sizeof(real), "%s.real", path);
	snprintf(tmp, sizeof(tmp), "%s" TMP_SUFFIX, path);
	rc = is_shim(path);
	if (rc == -ENOENT && !lexists(real)) {
		printf("%s: not there, left alone\n", path);
		return 0;
	}
	if (rc == 1 && lexists(real)) {
		printf("%s: already the shim (the shell is %s)\n", path, real);
		unlink(tmp);
		return 0;
	}
	if (rc == 1) {
		p_err("%s is a shim but %s is missing: restore the real shell first", path, real);
		return -ENOENT;
	}
	if (rc < 0 && rc != -ENOENT)
		return rc;
	rc = copy_file(shim, tmp);
	if (rc) {
		p_err("cannot write %s: %s", tmp, strerror(-rc));
		return rc;
	}
	if (!lexists(real)) {
		/* the file itself, or the symlink itself: never a copy that follows it */
		if (linkat(AT_FDCWD, path, AT_FDCWD, real, 0)) {
			rc = -errno;
			p_err("cannot link %s to %s: %s", path, real, strerror(-rc));
			unlink(tmp);
			return rc;
		}
	} else if (!same_file(path, real) && lexists(path)) {
		p_err("%s and %s both exist and differ: not touching them", path, real);
		unlink(tmp);
		return -EEXIST;
	}
	if (rename(tmp, path)) {
		rc = -errno;
		p_err("cannot put the shim at %s: %s", path, strerror(-rc));
		unlink(tmp);
		return rc;
	}
	printf("%s: shim installed (the shell is now %s)\n", path, real);
	return 0;
}

static int uninstall_one(const char *bin, const char *name)
{
	char path[PATH_MAX], real[PATH_MAX + 8], tmp[PATH_MAX + 16];
	struct stat st;
	int rc;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", bin, name) >= sizeof(path))
		return -ENAMETOOLONG;
	snprintf(real, sizeof(real), "%s.real", path);
	snprintf(tmp, sizeof(tmp), "%s" TMP_SUFFIX, path);
	unlink(tmp);
	if (lstat(real, &st)) {
		rc = is_shim(path);
		if (rc == 1) {
			p_err("%s is a shim and %s is missing: cannot restore the shell", path, real);
			return -ENOENT;
		}
		printf("%s: no shim, nothing to do\n", path);
		return 0;
	}
	if (same_file(path, real)) {
		/* an install stopped after its link: the shell never left */
		if (unlink(real))
			return -errno;
		printf("%s: restored (an unfinished install undone)\n", path);
		return 0;
	}
	rc = is_shim(path);
	if (rc == 0) {
		p_err("%s is not a shim, and %s exists too: not touching them", path, real);
		return -EEXIST;
	}
	if (rename(real, path)) {
		rc = -errno;
		p_err("cannot move %s back to %s: %s", real, path, strerror(-rc));
		return rc;
	}
	printf("%s: restored\n", path);
	return 0;
}

int do_shim(int argc, char **argv)
{
	static const char doc[] =
		"install: put the shell shim in place of /bin/sh and /bin/bash (the shells\n"
		"move to sh.real and bash.real). A shell started outside a supervised\n"
		"session then runs in one (execgate exec); one started inside runs directly.\n"
		"Inside or not is asked of the daemon of --pin-path, which answers from the\n"
		"kernel. With no daemon the shim refuses to run a shell (exit 126), unless\n"
		"installed with --fail-open.\n"
		"uninstall: put back exactly what was there.\n"
		"Both can be run again, also after an interruption (docs/agents.md).";
	static const struct argp_child children[] = { { &cli_pin_argp, 0, NULL, 0 }, {} };
	struct argp argp = { options, parse_opt, "install|uninstall", doc, children, NULL, NULL };
	char bin[PATH_MAX], self[PATH_MAX], shim[PATH_MAX + 16], conf[PATH_MAX];
	const char *root;
	struct shim_args a = {};
	struct eg_paths p;
	size_t i;
	int rc, err = 0;

	if (argp_parse(&argp, argc, argv, 0, NULL, &a))
		return EXIT_USAGE;
	if (geteuid()) {
		p_err("needs root (it replaces the system's shells)");
		return 1;
	}
	root = a.root ? a.root : "";
	if (a.root && (a.root[0] != '/' || access(a.root, F_OK))) {
		p_err("--root %s: an existing directory, by its absolute path", a.root);
		return EXIT_USAGE;
	}
	rc = bin_dir(root, bin, sizeof(bin));
	if (rc) {
		p_err("cannot find %s/bin: %s", root, strerror(-rc));
		return 1;
	}
	snprintf(conf, sizeof(conf), "%s%s", root, SHIM_CONF_PATH);
	rc = inside_root(root, bin);
	if (!rc)
		rc = inside_root(root, conf);
	if (rc) {
		p_err("%s or %s leads out of --root %s (a link to an absolute path?): %s; refusing",
		      bin, conf, root, rc == -EXDEV ? "it resolves outside" : strerror(-rc));
		return 1;
	}

	if (!strcmp(a.action, "uninstall")) {
		for (i = 0; i < sizeof(shells) / sizeof(shells[0]); i++)
			if (uninstall_one(bin, shells[i]))
				err = 1;
		if (!err && unlink(conf) && errno != ENOENT) {
			p_err("cannot remove %s: %s", conf, strerror(errno));
			err = 1;
		}
		if (!err) {
			*strrchr(conf, '/') = 0;
			rmdir(conf);	/* only when empty: nothing of yours goes */
		}
		return err;
	}

	if (eg_paths_resolve(a.common.pin_path, &p)) {
		p_err("--pin-path must be an absolute path");
		return EXIT_USAGE;
	}
	if (!realpath("/proc/self/exe", self)) {
		p_err("cannot find this binary: %s", strerror(errno));
		return 1;
	}
	if (a.shim)
		snprintf(shim, sizeof(shim), "%s", a.shim);
	else
		snprintf(shim, sizeof(shim), "%.*s/execgate-shim", (int)(strrchr(self, '/') - self), self);
	if (is_shim(shim) != 1) {
		p_err("%s is not an execgate shell shim (--shim PATH)", shim);
		return 1;
	}
	/* the configuration first: a shim never runs without it */
	rc = write_conf(root, &a, &p, a.execgate ? a.execgate : self);
	if (rc) {
		p_err("cannot write %s: %s", conf, strerror(-rc));
		return 1;
	}
	for (i = 0; i < sizeof(shells) / sizeof(shells[0]); i++)
		if (install_one(bin, shells[i], shim))
			err = 1;
	return err;
}
