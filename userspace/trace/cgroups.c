// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "trace/cgroups.h"
#include "util/fileid.h"

/* The cgroup2 mount's mountpoint into buf, and (ret_root) whether it mounts the hierarchy's root. */
static int cgroup2_mountinfo(char *buf, size_t len, bool *ret_root)
{
	char line[4096], mnt[PATH_MAX], root[PATH_MAX], fstype[64];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int err = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS ... - FSTYPE SOURCE OPTS */
		char *sep = strstr(line, " - ");

		if (!sep || sscanf(sep + 3, "%63s", fstype) != 1 || strcmp(fstype, "cgroup2"))
			continue;
		if (sscanf(line, "%*s %*s %*s %4095s %4095s", root, mnt) != 2)
			continue;
		err = (size_t)snprintf(buf, len, "%s", mnt) >= len ? -ENAMETOOLONG : 0;
		if (ret_root)
			*ret_root = !strcmp(root, "/");
		break;
	}
	fclose(f);
	return err;
}

int cgroup2_mount(char *buf, size_t len)
{
	return cgroup2_mountinfo(buf, len, NULL);
}

int cgroup_dir(const char *path, char *buf, size_t len)
{
	char root[PATH_MAX], full[PATH_MAX], real[PATH_MAX];
	struct stat st;
	size_t rl;
	int err;

	err = cgroup2_mount(root, sizeof(root));
	if (err)
		return err;
	rl = strlen(root);
	if (!strncmp(path, root, rl) && (path[rl] == '/' || !path[rl]))
		snprintf(full, sizeof(full), "%s", path);
	else if ((size_t)snprintf(full, sizeof(full), "%s/%s", root, path) >= sizeof(full))
		return -ENAMETOOLONG;
	if (!realpath(full, real))
		return -errno;
	if (strncmp(real, root, rl) || (real[rl] != '/' && real[rl]))
		return -EXDEV;
	if (stat(real, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if ((size_t)snprintf(buf, len, "%s", real) >= len)
		return -ENAMETOOLONG;
	return 0;
}

int cgroup_resolve(const char *path, uint64_t *ret_id, uint32_t *ret_level)
{
	char real[PATH_MAX], root[PATH_MAX];
	const char *rel;
	struct stat st;
	uint32_t level = 0;
	int err;

	err = cgroup_dir(path, real, sizeof(real));
	if (!err)
		err = cgroup2_mount(root, sizeof(root));
	if (err)
		return err;
	if (stat(real, &st))
		return -errno;
	for (rel = real + strlen(root); *rel; rel++)
		if (*rel == '/' && rel[1])
			level++;
	*ret_id = st.st_ino;
	*ret_level = level;
	return 0;
}

int cgroup_relpath(const char *path, char *buf, size_t len)
{
	char real[PATH_MAX], root[PATH_MAX];
	const char *rel;
	int err;

	err = cgroup_dir(path, real, sizeof(real));
	if (!err)
		err = cgroup2_mount(root, sizeof(root));
	if (err)
		return err;
	rel = real + strlen(root);
	if ((size_t)snprintf(buf, len, "%s", *rel ? rel : "/") >= len)
		return -ENAMETOOLONG;
	return 0;
}

#define CACHE_SLOTS 1024	/* direct-mapped: a miss costs one open_by_handle_at */

struct cgroup_cache {
	char root[PATH_MAX];
	int root_fd;
	bool whole;			/* the mount shows the whole hierarchy, as the kernel names it */
	uint64_t id[CACHE_SLOTS];
	char *path[CACHE_SLOTS];
};

struct cgroup_cache *cgroup_cache_new(void)
{
	struct cgroup_cache *c = calloc(1, sizeof(*c));
	struct stat st;
	bool root = false;

	if (!c)
		return NULL;
	c->root_fd = -1;
	if (!cgroup2_mountinfo(c->root, sizeof(c->root), &root))
		c->root_fd = open(c->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/*
	 * The mount names cgroups as the kernel does: the hierarchy's root
	 * mounted (not a subtree), in the initial cgroup namespace
	 * (PROC_CGROUP_INIT_INO).
	 */
	c->whole = c->root_fd >= 0 && root && !stat("/proc/self/ns/cgroup", &st) && st.st_ino == 0xEFFFFFFBu;
	return c;
}

void cgroup_cache_free(struct cgroup_cache *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < CACHE_SLOTS; i++)
		free(c->path[i]);
	if (c->root_fd >= 0)
		close(c->root_fd);
	free(c);
}

/* The kernfs file handle of a cgroup is its 64-bit id (FILEID_KERNFS). */
static char *lookup(struct cgroup_cache *c, uint64_t id)
{
	struct {
		struct file_handle fh;
		uint64_t id;
	} h = { .fh = { .handle_bytes = sizeof(uint64_t), .handle_type = 0xfe }, .id = id };
	char target[PATH_MAX];
	size_t rl = strlen(c->root);
	ssize_t n;
	int fd;

	if (c->root_fd < 0)
		return NULL;
	fd = open_by_handle_at(c->root_fd, &h.fh, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	n = eg_fd_link(fd, target, sizeof(target));
	close(fd);
	if (n < 0)
		return NULL;
	if (strncmp(target, c->root, rl))
		return NULL;
	return strdup(target[rl] ? target + rl : "/");
}

const char *cgroup_cache_path(struct cgroup_cache *c, uint64_t id)
{
	size_t slot = (id * 0x9e3779b97f4a7c15ull) >> 54;	/* 10 bits */
	char *p;

	if (!c || !id)
		return NULL;
	if (c->id[slot] == id && c->path[slot])
		return c->path[slot];
	p = lookup(c, id);
	if (!p)
		return NULL;
	free(c->path[slot]);
	c->path[slot] = p;
	c->id[slot] = id;
	return p;
}

void cgroup_cache_made(struct cgroup_cache *c, uint64_t id, const char *path, size_t len)
{
	size_t slot = (id * 0x9e3779b97f4a7c15ull) >> 54;
	char *p;

	if (!c || !id || !len || path[0] != '/' || (c->id[slot] == id && c->path[slot]))
		return;
	/* the cgroup's own word while it is there (our mount's names); the kernel's where they agree */
	p = lookup(c, id);
	if (!p && c->whole)
		p = strndup(path, len);
	if (!p)
		return;
	free(c->path[slot]);
	c->path[slot] = p;
	c->id[slot] = id;
}

static bool all_hex(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return n > 0;
}

/* "<prefix><hex>[.scope]" -> the hex id; conmon helpers are not the container. */
static bool match_id(const char *comp, size_t n, const char *prefix, struct eg_container *ret)
{
	size_t pl = strlen(prefix);
	const char *id = comp + pl;
	size_t idn;

	if (n <= pl || strncmp(comp, prefix, pl))
		return false;
	idn = n - pl;
	if (idn > 6 && !memcmp(id + idn - 6, ".scope", 6))
		idn -= 6;
	if (idn < 12 || idn >= sizeof(ret->id) || !all_hex(id, idn))
		return false;
	memcpy(ret->id, id, idn);
	ret->id[idn] = '\0';
	return true;
}

/* An LXC container's name: letters, digits, '-', '_', '.' (it goes into a glob of the runtime's state). */
static bool lxc_name(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("-_.", s[i]))
			return false;
	return true;
}

int cgroup_container(const char *path, struct eg_container *ret)
{
	static const struct { const char *prefix, *runtime; } pats[] = {
		{ "libpod-", "podman" },
		{ "docker-", "docker" },
		{ "cri-containerd-", "containerd" },
		{ "crio-", "crio" },
	};
	const char *p, *end, *pod;
	bool found = false, user = false, user_found = false;
	size_t i, n, matches = 0;

	memset(ret, 0, sizeof(*ret));
	/* the innermost component that names one wins */
	for (p = path; p && *p; p = end) {
		while (*p == '/')
			p++;
		end = strchr(p, '/');
		n = end ? (size_t)(end - p) : strlen(p);
		if (!n)
			break;
		/*
		 * systemd delegates user@UID.service to the user: any name below
		 * it is the user's choice (docker-<another container's id>.scope),
		 * so a container found there is that user's, nothing more.
		 */
		if (n > 13 && !strncmp(p, "user@", 5) && !memcmp(p + n - 8, ".service", 8))
			user = true;

		for (i = 0; i < sizeof(pats) / sizeof(pats[0]); i++) {
			struct eg_container c = {};

			if (match_id(p, n, pats[i].prefix, &c)) {
				memcpy(ret->id, c.id, sizeof(ret->id));
				ret->runtime = pats[i].runtime;
				found = true;
				user_found = user;
				matches++;
			}
		}
		/* /docker/<id>, /kubepods/.../pod<uid>/<id> (cgroupfs drivers) */
		if (n == 64 && all_hex(p, n) && p > path) {
			memcpy(ret->id, p, n);
			ret->id[n] = '\0';
			ret->runtime = strstr(path, "/kubepods") ? "kubernetes" :
				       strstr(path, "/docker/") ? "docker" : "unknown";
			found = true;
			user_found = user;
			matches++;
		}
		if (n > 12 && !strncmp(p, "lxc.payload.", 12) && n - 12 < sizeof(ret->id) && lxc_name(p + 12, n - 12)) {
			memcpy(ret->id, p + 12, n - 12);
			ret->id[n - 12] = '\0';
			ret->runtime = "lxc";
			found = true;
			user_found = user;
			matches++;
		}
	}
	if (!found)
		return -ENOENT;
	/*
	 * The container found, innermost, is below a user's subtree, or below
	 * another container's cgroup, whose names are that container's choice
	 * (one that may write its cgroup tree: --systemd, privileged, LXC): it
	 * is named as it says, and nothing is read about it from the host's
	 * runtimes (it could name itself after another container).
	 */
	ret->user = user_found || matches > 1;
	if (ret->user)
		return 0;	/* no pod of the cluster's either */
	/* kubepods: the pod uid, "pod<uid>" (cgroupfs) or "-pod<uid with _>.slice" (systemd) */
	pod = strstr(path, "pod");
	while (pod && strstr(path, "kubepods")) {
		const char *u = pod + 3;

		for (n = 0; u[n] && u[n] != '/' && u[n] != '.'; n++)
			;
		if (n == 36 && n < sizeof(ret->pod_uid)) {
			for (i = 0; i < n; i++)
				ret->pod_uid[i] = u[i] == '_' ? '-' : u[i];
			ret->pod_uid[n] = '\0';
			break;
		}
		pod = strstr(pod + 3, "pod");
	}
	return 0;
}
