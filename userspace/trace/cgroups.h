/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* cgroup v2 paths and ids: the kernel reports ids, policies name paths. */
#ifndef EG_CGROUPS_H
#define EG_CGROUPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The cgroup2 mount point, e.g. /sys/fs/cgroup/unified. */
int cgroup2_mount(char *buf, size_t len);
/* A cgroup v2 directory (path may be relative to the cgroup2 mount) -> its real path. */
int cgroup_dir(const char *path, char *buf, size_t len);
/* A cgroup v2 directory -> its path from the hierarchy's root ("/a/b", as the kernel names it). */
int cgroup_relpath(const char *path, char *buf, size_t len);
/* A cgroup v2 directory -> id and level (root = 0); path may be relative to the cgroup2 mount. */
int cgroup_resolve(const char *path, uint64_t *ret_id, uint32_t *ret_level);

/*
 * id -> path from the hierarchy root ("/a/b", "/" for the root), through a
 * bounded cache. The returned string lives until the next call.
 */
struct cgroup_cache;
struct cgroup_cache *cgroup_cache_new(void);
void cgroup_cache_free(struct cgroup_cache *c);
const char *cgroup_cache_path(struct cgroup_cache *c, uint64_t id);
/*
 * The kernel said it made cgroup id at path (from the hierarchy's root):
 * kept, so a cgroup gone before its records are written is still named.
 * What the cgroup itself says, while it is there, comes first.
 */
void cgroup_cache_made(struct cgroup_cache *c, uint64_t id, const char *path, size_t len);

/* A container named by a cgroup path (libpod-*, docker-*.scope, cri-containerd-*, crio-*, kubepods). */
struct eg_container {
	char id[80];
	const char *runtime;		/* "podman", "docker", "containerd", "crio", "lxc", "kubernetes" */
	char pod_uid[40];		/* kubepods paths: the pod's uid, else "" */
	bool user;			/* below a user's own subtree (user@UID.service): the name is the user's */
};
/* 0 and *ret when path names a container; -ENOENT otherwise. */
int cgroup_container(const char *path, struct eg_container *ret);

#endif
