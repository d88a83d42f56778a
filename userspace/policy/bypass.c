// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * internal_bypass, bound to files rather than names. At load (and reload)
 * every entry is expanded in the daemon's own mount namespace (the
 * host's): a path or path glob with glob(3), a bare name glob such as
 * "*.real" in the system binary directories only. The device and inode of
 * each file found make the identity set. An exec gets the bypass only if
 * its resolved path matches an entry AND its file is in the set; on a
 * miss (a binary replaced since the load) the path is looked up again in
 * the host namespace, and the file must be the same one and sit in a
 * root-owned directory chain nobody else can write. A file that only
 * looks like the named one (a copy, a hard link elsewhere, a tmpfs over
 * the directory in another mount namespace, a chroot) never gets it.
 */
#include <errno.h>
#include <fnmatch.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include "policy/internal.h"
#include "util/fileid.h"

/* Where a bare name ("*.real", "agentsh") is looked for. */
static const char *const system_dirs[] = {
	"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin",
	"/usr/libexec", "/usr/lib/execgate", NULL,
};

bool eg_trusted_dirs(const char *dir)
{
	char buf[PATH_MAX];
	struct stat st;
	char *slash;

	if (snprintf(buf, sizeof(buf), "%s", dir) >= (int)sizeof(buf))
		return false;
	if (lstat(buf, &st) || !S_ISDIR(st.st_mode) || st.st_uid != 0 ||
	    (st.st_mode & (S_IWGRP | S_IWOTH)))
		return false;
	while ((slash = strrchr(buf, '/')) != NULL) {
		if (slash == buf)
			slash[1] = '\0';
		else
			*slash = '\0';
		if (lstat(buf, &st) || !S_ISDIR(st.st_mode) || st.st_uid != 0 ||
		    (st.st_mode & (S_IWGRP | S_IWOTH)))
			return false;
		if (slash == buf)
			break;
	}
	return true;
}

/* Root owns it and no one else may write it: the file and every directory above. */
static bool trusted_chain(const char *path)
{
	char buf[PATH_MAX];
	struct stat st;
	char *slash;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return false;
	if (lstat(buf, &st) || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
	    (st.st_mode & (S_IWGRP | S_IWOTH)))
		return false;
	slash = strrchr(buf, '/');
	if (!slash)
		return false;
	if (slash == buf)
		slash[1] = '\0';
	else
		*slash = '\0';
	return eg_trusted_dirs(buf);
}

static int add_id(struct eg_policy *p, uint64_t dev, uint64_t ino)
{
	struct eg_file_id *v;
	size_t i;

	for (i = 0; i < p->n_bypass_ids; i++)
		if (p->bypass_ids[i].dev == dev && p->bypass_ids[i].ino == ino)
			return 0;
	if (p->n_bypass_ids >= EG_POLICY_MAX_BYPASS_IDS)
		return -E2BIG;
	v = realloc(p->bypass_ids, (p->n_bypass_ids + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	p->bypass_ids = v;
	v[p->n_bypass_ids++] = (struct eg_file_id){ dev, ino };
	return 0;
}

static void expand(struct eg_policy *p, const char *pattern)
{
	glob_t g = {};
	struct stat st;
	size_t i;

	if (glob(pattern, GLOB_NOSORT | GLOB_NOESCAPE, NULL, &g) == 0) {
		for (i = 0; i < g.gl_pathc; i++) {
			char real[PATH_MAX];

			/* the identity of what the path leads to: execs see the resolved file */
			if (!realpath(g.gl_pathv[i], real) || stat(real, &st) || !S_ISREG(st.st_mode) ||
			    !trusted_chain(real))
				continue;
			add_id(p, eg_kdev(st.st_dev), st.st_ino);
		}
	}
	globfree(&g);
}

void eg_bypass_dirs(void (*fn)(const char *dir, void *arg), void *arg)
{
	int k;

	for (k = 0; system_dirs[k]; k++)
		fn(system_dirs[k], arg);
}

void eg_bypass_refresh(struct eg_policy *p)
{
	char pat[PATH_MAX];
	uint32_t i;
	int k;

	p->n_bypass_ids = 0;
	if (p->no_files)
		return;		/* no file of it is looked at: it bypasses nothing */
	for (i = 0; i < p->bypass.n; i++) {
		const char *e = p->bypass.v[i];

		if (strchr(e, '/')) {
			expand(p, e);
			continue;
		}
		for (k = 0; system_dirs[k]; k++) {
			snprintf(pat, sizeof(pat), "%s/%s", system_dirs[k], e);
			expand(p, pat);
		}
	}
}

/* Which entry names filename: BY_PATH a path or path glob, BY_NAME only a bare name (0: none). */
enum { BY_PATH = 1, BY_NAME };

static int path_matches(const struct eg_policy *p, const char *filename, size_t len)
{
	const char *slash = strrchr(filename, '/');
	const char *base = slash ? slash + 1 : filename;
	int by = 0;
	uint32_t i;

	for (i = 0; i < p->bypass.n; i++) {
		const char *e = p->bypass.v[i];

		if (strchr(e, '/')) {
			if (eg_glob_match(e, &p->bypass_glob[i], filename, len))
				return BY_PATH;
		} else if (!fnmatch(e, base, 0)) {
			by = BY_NAME;
		}
	}
	return by;
}

bool policy_bypass_allowed(const struct eg_policy *cp, const char *filename, uint64_t dev,
			   uint64_t ino, bool foreign_ns)
{
	struct eg_policy *p = (struct eg_policy *)cp;	/* the identity cache may learn */
	struct stat st;
	size_t i;
	int by;

	if (!p || !p->bypass.n || p->no_files || foreign_ns || !filename || filename[0] != '/')
		return false;
	by = path_matches(p, filename, strlen(filename));
	if (!by)
		return false;
	if (stat(filename, &st) || !S_ISREG(st.st_mode))
		return false;
	/* without the kernel's identity (policy test), the host file stands for itself */
	if (!dev && !ino) {
		dev = eg_kdev(st.st_dev);
		ino = st.st_ino;
	}
	for (i = 0; i < p->n_bypass_ids; i++)
		if (p->bypass_ids[i].dev == dev && p->bypass_ids[i].ino == ino)
			return true;
	/* A miss: the same path on the host must lead to this very file, in a trusted place. */
	if (eg_kdev(st.st_dev) != dev || st.st_ino != ino || !trusted_chain(filename))
		return false;
	/* a bare-name entry covers the system directories only (whatever other entries the list has) */
	if (by == BY_NAME) {
		int k;
		size_t n;

		for (k = 0; system_dirs[k]; k++) {
			n = strlen(system_dirs[k]);
			if (!strncmp(filename, system_dirs[k], n) && filename[n] == '/' &&
			    !strchr(filename + n + 1, '/'))
				break;
		}
		if (!system_dirs[k])
			return false;
	}
	add_id(p, dev, ino);
	return true;
}
